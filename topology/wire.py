# Deprecated (issue 12): use cep.protocol.frames; kept only for code written against it now.
from cep.protocol.frames import pack_message as pack, unpack_message as unpack  # noqa: F401
