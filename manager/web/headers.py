"""Security headers on every answer of the manager (API and console): a Content-Security-Policy
that allows only the console's own scripts, styles and images (no inline script, no framing,
forms to this origin only), X-Frame-Options, Referrer-Policy and X-Content-Type-Options."""

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


def register(app):
    @app.after_request
    def secure_headers(resp):
        for name, value in HEADERS.items():
            resp.headers.setdefault(name, value)
        return resp
