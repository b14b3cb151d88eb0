"""What a trusted reverse proxy says about a request: the client's scheme and address.

X-Forwarded-Proto and X-Forwarded-For are believed only from the peers listed in
`console.trusted_proxies`; anyone else could send them to look like someone else.
"""

from __future__ import annotations

from aiohttp import web


def from_trusted_proxy(request: web.Request, trusted: frozenset[str]) -> bool:
    return request.remote is not None and request.remote in trusted


def is_https(request: web.Request, trusted: frozenset[str]) -> bool:
    """The browser reached us over TLS: directly, or through a trusted proxy that says so."""
    if request.secure:
        return True
    if from_trusted_proxy(request, trusted):
        proto = request.headers.get("X-Forwarded-Proto", "")
        return proto.split(",")[0].strip().lower() == "https"
    return False


def client_address(request: web.Request, trusted: frozenset[str]) -> str:
    """The address sign-in attempts are counted against: the nearest hop a trusted proxy saw."""
    remote = request.remote or "unknown"
    if not from_trusted_proxy(request, trusted):
        return remote
    hops = [h.strip() for h in request.headers.get("X-Forwarded-For", "").split(",") if h.strip()]
    # The last hop not itself a trusted proxy: earlier entries are whatever the client wrote.
    for hop in reversed(hops):
        if hop not in trusted:
            return hop
    return remote
