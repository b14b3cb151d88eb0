"""The inbound path: platform events to stored messages, in order, and to the chat's lane."""
