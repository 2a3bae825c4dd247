# Deprecated path (documented in PROTOCOL.md before issue 12): use cep.protocol.frames.
from cep.protocol.frames import *  # noqa: F401,F403
