"""The manager's security settings (part of manager.settings.MANAGER)."""

from cep.protocol.settings import Setting

AUTH_SETTINGS = [
    Setting(
        "security",
        "auth",
        bool,
        True,
        "users, tokens and sessions on the REST API and "
        "console, cluster secret for workers; off only on loopback or with --insecure",
    ),
    Setting(
        "security",
        "insecure",
        bool,
        False,
        "allow security.auth off on a non-loopback bind (a warning is logged at every start)",
    ),
    Setting(
        "security",
        "session_idle_secs",
        float,
        8 * 3600.0,
        "console sessions end after this many idle seconds",
    ),
    Setting(
        "security",
        "admin_password_file",
        str,
        "",
        "first start: file holding the super "
        "admin's password (CEP_ADMIN_PASSWORD wins; neither: generated, printed once)",
    ),
    Setting(
        "security",
        "cluster_secret_file",
        str,
        "",
        "file of the secret workers present "
        "(empty: $CEP_CLUSTER_SECRET, else <data_dir>/security/cluster-secret, generated)",
    ),
    Setting(
        "http",
        "tls_cert",
        str,
        "",
        "PEM certificate: serve the REST API and console over HTTPS (with http.tls_key)",
    ),
    Setting("http", "tls_key", str, "", "PEM private key of http.tls_cert"),
]
