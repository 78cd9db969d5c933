"""Credentials out of everything the gateway writes: what the client receives and every record.

A secret is replaced by ``[redacted]`` wherever it appears. On a stream a secret may be cut
between two chunks, so :class:`StreamRedactor` holds back only the tail of a chunk that could
start one (nothing, in ordinary traffic: an SSE event ends in a blank line), so bytes pass
unchanged and without delay. Values shorter than :data:`MIN_SECRET` are not secrets (a dummy
key "x" would otherwise blank every "x" of a reply).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["MARK", "MIN_SECRET", "Redactor", "StreamRedactor"]

MARK = "[redacted]"
MIN_SECRET = 8


class Redactor:
    """Replaces each of ``secrets`` (the long enough ones) in text and bytes."""

    def __init__(self, secrets: Iterable[str | None]) -> None:
        found = {s for s in secrets if s and len(s) >= MIN_SECRET}
        self._texts = sorted(found, key=len, reverse=True)  # longest first: no partial leftovers
        self._bytes = [s.encode() for s in self._texts]

    def text(self, value: str) -> str:
        for secret in self._texts:
            if secret in value:
                value = value.replace(secret, MARK)
        return value

    def bytes(self, value: bytes) -> bytes:
        for secret in self._bytes:
            if secret in value:
                value = value.replace(secret, MARK.encode())
        return value

    def stream(self) -> StreamRedactor:
        return StreamRedactor(self)

    @property
    def secrets(self) -> list[bytes]:
        return list(self._bytes)


class StreamRedactor:
    """Redacts a byte stream fed in chunks; ``feed`` returns what may be sent now."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._secrets = redactor.secrets
        self._held = b""

    def _hold(self, data: bytes) -> int:
        """How many trailing bytes of ``data`` could be the start of a secret."""
        best = 0
        last = data[-1:]
        for secret in self._secrets:
            if not last or last not in secret:
                continue  # a secret's start ends in one of its own bytes
            for n in range(min(len(secret) - 1, len(data)), best, -1):
                if data.endswith(secret[:n]):
                    best = n
                    break
        return best

    def feed(self, chunk: bytes) -> bytes:
        if not self._secrets:
            return chunk
        data = (
            self._redactor.bytes(self._held + chunk) if self._held else self._redactor.bytes(chunk)
        )
        keep = self._hold(data)
        self._held = data[len(data) - keep :] if keep else b""
        return data[: len(data) - keep] if keep else data

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return held
