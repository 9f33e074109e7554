"""Tools from Model Context Protocol servers (stdio), under the same gates as built-ins.

`config` is light (pydantic only); the SDK is imported by `connection` when a server is
first started.
"""
