"""The ZeroMQ endpoint registry: receiver spouts and worker publishers register, clients look up."""
