"""The operator web console (SPEC 18): server-rendered pages on the operator endpoint.

`web.console_app` builds the aiohttp application; `links.issue_link` is what the `/console` chat
command uses. This package file imports nothing, so the chat command does not load the web layer.
"""
