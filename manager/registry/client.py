# Deprecated path (documented in PROTOCOL.md before issue 12): use cep.protocol.registry_client.
from cep.protocol.registry_client import Heartbeat, RegistryClient  # noqa: F401
