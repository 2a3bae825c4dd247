# Deprecated path (documented in PROTOCOL.md before the protocol moved to cep.protocol): use cep.protocol.registry_client.
from cep.protocol.registry_client import Heartbeat, RegistryClient  # noqa: F401
