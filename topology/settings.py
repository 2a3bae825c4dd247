# Deprecated path (documented in topology/README.md before the settings moved to cep.protocol): use cep.protocol.settings.
from cep.protocol.settings import *  # noqa: F401,F403
