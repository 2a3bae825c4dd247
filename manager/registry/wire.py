# Deprecated path (documented in PROTOCOL.md before the protocol moved to cep.protocol): use cep.protocol.frames.
from cep.protocol.frames import *  # noqa: F401,F403
