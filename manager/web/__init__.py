"""The manager's HTTP side: `create_app(config=None)` (Flask application factory)."""

from flask import Flask, jsonify
from werkzeug.exceptions import HTTPException

from manager.exceptions import ManagerError


def create_app(config=None):
    """The REST API app. `config` may hold MANAGER (a started manager.server.Manager, as tests
    inject) or SETTINGS (manager setting overrides, e.g. {"http.port": 0}); without MANAGER
    one is built from conf/manager.yaml, CEP_* variables and SETTINGS, and started."""
    app = Flask(__name__)
    app.config.from_mapping(MANAGER=None, SETTINGS={})
    app.json.sort_keys = False
    app.config.update(config or {})
    if app.config["MANAGER"] is None:
        from manager.server import Manager
        from manager.settings import load_manager_settings

        app.config["MANAGER"] = Manager(load_manager_settings(app.config["SETTINGS"])).start()
    from manager.web import api_docs, api_plans, api_status, api_validate, api_worker

    app.register_blueprint(api_plans.bp)
    app.register_blueprint(api_worker.bp)
    for module in (api_validate, api_status, api_docs):  # validate, status, docs
        app.register_blueprint(module.bp)
    from manager.web import api_backtest

    app.register_blueprint(api_backtest.bp)  # backtests of stored plans
    from manager.web import docs_site

    app.register_blueprint(docs_site.bp)  # the built documentation site at /docs/
    from manager.web import console

    console.register(app)  # /console pages, /api/v1/try and /simulate, / -> /console/
    _register_auth(app)  # users, tokens, sessions, CSRF, audit
    settings = getattr(app.config["MANAGER"], "settings", None)
    app.config["MAX_CONTENT_LENGTH"] = settings["http.max_body_bytes"] if settings else 4 << 20
    _register_errors(app)
    from manager.web import headers

    headers.register(app)  # CSP, framing, referrer, sniffing
    return app


def _register_auth(app):
    from manager.auth import csrf
    from manager.web import api_users, auth_guard, auth_views

    service = app.config["MANAGER"].auth
    app.secret_key = service.secret_key  # generated at first start in <data>/security
    settings = app.config["MANAGER"].settings
    app.config.update(
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Strict",
        SESSION_COOKIE_NAME="cep_session",
        SESSION_COOKIE_SECURE=bool(settings["http.tls_cert"]),
    )
    app.jinja_env.globals["csrf_token"] = csrf.token
    app.register_blueprint(api_users.bp)
    app.register_blueprint(auth_views.bp)
    auth_guard.register(app)
    from manager.web import leader_redirect

    leader_redirect.register(app)  # a follower sends writes to the leader (307)


def _register_errors(app):
    @app.errorhandler(ManagerError)
    def manager_error(exc):
        if exc.status >= 500:  # store/deploy failures name data paths and URLs: log them only
            app.logger.error("%s: %s", type(exc).__name__, exc)
            return jsonify(
                {
                    "error": type(exc).__name__,
                    "message": "the manager could not "
                    "complete the request; its log has the details",
                }
            ), exc.status
        resp = jsonify(exc.to_dict())
        if getattr(exc, "retry_after", None):  # 429 (login throttle): when to try again
            resp.headers["Retry-After"] = str(exc.retry_after)
        return resp, exc.status

    @app.errorhandler(HTTPException)
    def http_error(exc):
        message = exc.description
        if exc.code == 413:  # JSON, with the limit
            message = (
                f"request body is larger than {app.config['MAX_CONTENT_LENGTH']} bytes "
                f"(http.max_body_bytes)"
            )
        return jsonify({"error": type(exc).__name__, "message": message}), exc.code

    @app.errorhandler(RecursionError)
    def too_deep(exc):
        return jsonify({"error": "BadRequest", "message": "the JSON body nests too deeply"}), 400

    @app.errorhandler(Exception)
    def unexpected(exc):  # no exception text (paths, internals) in the response
        app.logger.exception("unexpected error")
        return jsonify(
            {
                "error": "InternalError",
                "message": "internal error; the manager's log has the details",
            }
        ), 500
