"""Console pages answer errors with an HTML page (what went wrong and a way back), never a
stack trace: an unknown plan is a 404 page, a bad tenant id a 400 page."""

from flask import current_app, render_template
from werkzeug.exceptions import HTTPException

from manager.exceptions import ManagerError

TITLES = {
    400: "Bad request",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    500: "Internal error",
}


def error_page(status, message):
    return render_template(
        "console/error.html", status=status, title=TITLES.get(status, "Error"), message=message
    ), status


def register(bp):
    @bp.errorhandler(ManagerError)
    def manager_error(exc):
        return error_page(
            exc.status,
            str(exc)
            if exc.status < 500
            else "the manager could not complete this request; see its log",
        )

    @bp.errorhandler(HTTPException)
    def http_error(exc):
        return error_page(exc.code or 500, exc.description)

    @bp.errorhandler(Exception)
    def unexpected(exc):
        current_app.logger.exception("console page failed")
        return error_page(500, "the page could not be rendered; the manager's log has the details")

    @bp.route("/<path:rest>")
    def unknown_page(rest):
        return error_page(404, f"there is no console page /console/{rest}")
