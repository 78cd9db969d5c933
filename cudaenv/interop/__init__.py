"""Interoperation with other evaluation frameworks: Harbor task export and its verifier."""

__all__: list[str] = []
