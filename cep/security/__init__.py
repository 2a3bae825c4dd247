"""Security helpers shared by the manager and the worker (both sides import these; neither
package owns them). See SECURITY.md at the repository root."""
