# Deprecated path (documented in topology/README.md before issue 12): use cep.protocol.settings.
from cep.protocol.settings import *  # noqa: F401,F403
