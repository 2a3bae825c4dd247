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
    for module in (api_validate, api_status, api_docs):  # issue 9: validate, status, docs
        app.register_blueprint(module.bp)
    from manager.web import console
    console.register(app)  # /console pages, /api/v1/try and /simulate, / -> /console/
    _register_errors(app)
    return app


def _register_errors(app):
    @app.errorhandler(ManagerError)
    def manager_error(exc):
        return jsonify(exc.to_dict()), exc.status

    @app.errorhandler(HTTPException)
    def http_error(exc):
        return jsonify({"error": type(exc).__name__, "message": exc.description}), exc.code

    @app.errorhandler(Exception)
    def unexpected(exc):
        app.logger.exception("unexpected error")
        return jsonify({"error": type(exc).__name__, "message": str(exc)}), 500
