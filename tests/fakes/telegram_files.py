"""Files on the fake Bot API: photo and document messages, getFile and the file endpoint."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from tests.fakes.telegram_wire import BadRequestError


class FileHosting:
    """Mixed into FakeTelegram (which builds the messages): `files` maps file_id to bytes,
    `downloads` records the file paths fetched."""

    token: str
    files: dict[str, bytes]
    downloads: list[str]

    def media_message(
        self,
        caption: str,
        *,
        photo: bytes | None = None,
        document: tuple[str, str, bytes] | None = None,
        mention_bot: bool = False,
        chat_id: int = -1001,
        user_id: int = 1,
        first_name: str = "Alice",
        declared_size: int | None = None,
    ) -> dict[str, Any]:
        """A group photo or document (name, mime type, bytes) with a caption; the file is
        hosted here for getFile. `declared_size` overrides the size Telegram reports."""
        update = self.group_message(
            caption,
            mention_bot=mention_bot,
            chat_id=chat_id,
            user_id=user_id,
            first_name=first_name,
        )
        message = update["message"]
        message["caption"] = message.pop("text")
        if "entities" in message:
            message["caption_entities"] = message.pop("entities")
        file_id = f"file{message['message_id']}"
        data = photo if photo is not None else (document[2] if document else b"")
        self.files[file_id] = data
        size = declared_size if declared_size is not None else len(data)
        if photo is not None:
            message["photo"] = [
                {"file_id": file_id + "s", "file_unique_id": "s", "width": 90, "height": 60},
                {
                    "file_id": file_id,
                    "file_unique_id": "u" + file_id,
                    "width": 1280,
                    "height": 720,
                    "file_size": size,
                },
            ]
        elif document is not None:
            message["document"] = {
                "file_id": file_id,
                "file_unique_id": "u" + file_id,
                "file_name": document[0],
                "mime_type": document[1],
                "file_size": size,
            }
        return update

    async def _get_file(self, params: dict[str, Any]) -> dict[str, Any]:
        file_id = str(params["file_id"])
        if file_id not in self.files:
            raise BadRequestError("wrong file_id or the file is temporarily unavailable")
        data = self.files[file_id]
        return {
            "file_id": file_id,
            "file_unique_id": "u" + file_id,
            "file_size": len(data),
            "file_path": f"files/{file_id}",
        }

    async def _download(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return web.Response(status=401)
        path = request.match_info["path"]
        self.downloads.append(path)
        data = self.files.get(path.removeprefix("files/"))
        if data is None:
            return web.Response(status=404)
        return web.Response(body=data, content_type="application/octet-stream")
