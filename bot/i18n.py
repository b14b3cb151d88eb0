"""The bot's own words (commands, notices, status) in the chat's language: English and Chinese.

Texts are written in English where they are made; `localize` translates a finished text line by
line from a catalog of templates, so the code that composes a notice needs no language at hand.
A line the catalog does not know stays as it is (numbers, names and model output are never
touched). The language comes from the chat's `language` setting, else the platform's language
code of the chat's members.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Language = Literal["en", "zh"]
ENGLISH: Language = "en"
CHINESE: Language = "zh"
_CHINESE_NAMES = frozenset({"zh", "chinese", "mandarin", "cn"})
_PLACEHOLDER = re.compile(r"\{(\w+)\}")

# (English template, Chinese template); {name} matches any text on the line and is carried over.
# fmt: off
_TEMPLATES: tuple[tuple[str, str], ...] = (
    # gateway notices
    ("compactbot is not enabled in this chat. Ask the bot's operator to allow it.",
     "此聊天未启用 compactbot。请联系机器人的运营者开通。"),
    ("{name}, you're sending messages faster than I can answer; please slow down a little.",
     "{name}，你发消息的速度超过了我回复的速度，请稍微慢一点。"),
    ("This chat has used its token budget for today; I'll be back tomorrow (UTC).",
     "本聊天今天的 token 额度已用完，明天（UTC）再见。"),
    ("This chat has used its token budget for today.", "本聊天今天的 token 额度已用完。"),
    ("You have used your token budget in this chat for today.",
     "你今天在本聊天的 token 额度已用完。"),
    ("I have used my token budget for all chats for today.",
     "我今天在所有聊天中的 token 总额度已用完。"),
    ("It resets at 00:00 UTC, in {wait}.", "额度将在 UTC 00:00 重置，还有 {wait}。"),
    ("This chat is asking faster than I can answer; please slow down a little.",
     "本聊天的提问速度超过了我回复的速度，请稍微慢一点。"),
    ("You can ask again within a minute.", "一分钟内即可再问。"),
    ("🧹 This chat reached {n} messages, so I compacted the older ones into a summary ({a} → {b}). "
     "Nothing was deleted; /status shows details.",
     "🧹 本聊天已达到 {n} 条消息，我把较早的消息压缩成了摘要（{a} → {b}）。没有删除任何内容；"
     "/status 可查看详情。"),
    ("I can't use the language model right now (access or quota problem). Your message is saved.",
     "我现在无法使用语言模型（权限或额度问题）。你的消息已保存。"),
    ("The language model is rate-limiting me right now. Your message is saved; try again shortly.",
     "语言模型正在限流。你的消息已保存，请稍后再试。"),
    ("I couldn't reach the language model just now. Your message is saved; try again shortly.",
     "暂时无法连接语言模型。你的消息已保存，请稍后再试。"),
    ("I could not finish this answer; please ask again.", "我没能完成这个回答，请再问一次。"),
    ("⏸ Automatic compaction is paused for a few minutes: the last compactions did not bring the "
     "context under the limit. Admins can run /compress or /new.",
     "⏸ 自动压缩暂停几分钟：最近几次压缩没能把上下文降到限制以下。"
     "管理员可以运行 /compress 或 /new。"),
    ("⏸ Automatic compaction is paused for {m} min because the last attempts did not shrink the "
     "context. Admins can run /compress or /new.",
     "⏸ 自动压缩暂停 {m} 分钟，因为最近几次尝试没能缩小上下文。管理员可以运行 /compress 或 /new。"),
    ("⚠️ I couldn't compact this chat's history (the summary service failed: {e}). Nothing was "
     "lost; I'll retry later, or an admin can run /compress.",
     "⚠️ 我没能压缩本聊天的历史（摘要服务失败：{e}）。没有丢失任何内容；我稍后会重试，"
     "管理员也可以运行 /compress。"),
    # commands
    ("Unknown command /{c}. Try /help.", "未知命令 /{c}。试试 /help。"),
    ("⛔ {c} needs chat-admin rights here. Nothing was changed.",
     "⛔ {c} 需要本聊天的管理员权限。没有做任何更改。"),
    ("🆕 Started a new conversation. The previous one is kept and stays searchable.",
     "🆕 已开始新的对话。之前的对话会保留，并且仍可搜索。"),
    ("Another compaction of this chat is running; try again in a moment.",
     "本聊天正在进行另一次压缩，请稍后再试。"),
    ("⚠️ Compression aborted ({e}). Nothing was lost.", "⚠️ 压缩已中止（{e}）。没有丢失任何内容。"),
    ("Nothing to compress yet ({n} messages, {t} tokens): the recent messages are all kept "
     "verbatim.", "暂时没有可压缩的内容（{n} 条消息，{t} tokens）：最近的消息都会原样保留。"),
    ("🗜️ Compressed: {a} → {b} messages, {c} → {d} tokens{rest}",
     "🗜️ 已压缩：{a} → {b} 条消息，{c} → {d} tokens{rest}"),
    ("⚙️ Settings for this chat:", "⚙️ 本聊天的设置："),
    ("✅ {k} = {v} (takes effect with the next message)", "✅ {k} = {v}（从下一条消息起生效）"),
    ("✅ {k} reset to the default.", "✅ {k} 已恢复默认值。"),
    ("No pins in this chat. Admins can add one with /pin <text>.",
     "本聊天没有置顶事实。管理员可以用 /pin <文本> 添加。"),
    ("📌 Pins:", "📌 置顶事实："),
    ("📌 Pinned #{n}: {t}", "📌 已置顶 #{n}：{t}"),
    ("Unpinned #{n}: {t}", "已取消置顶 #{n}：{t}"),
    ("Usage: /pin <text to keep verbatim>", "用法：/pin <要原样保留的文本>"),
    # /forget, /purge
    ("Reply to one of your messages with /forget to erase it, or send /forget all to erase "
     "everything you wrote in this chat.",
     "回复你自己的一条消息并发送 /forget 可删除它，"
     "或发送 /forget all 删除你在本聊天写的全部内容。"),
    ("Reply to a message with /purge, or send /purge <member id>.",
     "回复一条消息并发送 /purge，或发送 /purge <成员 id>。"),
    ("Nothing to forget: that is not a message of yours that I stored.",
     "没有可删除的内容：那不是我保存的你的消息。"),
    ("🧹 Forgotten: that message is gone from my history, search and memory.",
     "🧹 已删除：这条消息已从我的历史、搜索和记忆中移除。"),
    ("I have nothing stored that you wrote in this chat.", "我没有保存你在本聊天写的任何内容。"),
    ("This erases all {n} messages you wrote in this chat from my history, search and memory. "
     "Send /forget confirm within 2 minutes to go ahead.",
     "这将从我的历史、搜索和记忆中删除你在本聊天写的全部 {n} 条消息。请在 2 分钟内发送 "
     "/forget confirm 确认。"),
    ("Nothing to confirm. Send /forget all first.", "没有需要确认的操作。请先发送 /forget all。"),
    ("🧹 Forgotten: {n} stored messages of yours are gone from this chat.",
     "🧹 已删除：你在本聊天保存的 {n} 条消息已移除。"),
    ("Nothing to purge: I stored no such message here.",
     "没有可清除的内容：我在这里没有保存这样的消息。"),
    ("🧹 Purged {n} stored messages from this chat's history, search and memory.",
     "🧹 已从本聊天的历史、搜索和记忆中清除 {n} 条消息。"),
    # /summary
    ("⏳ One /summary a minute, please; try again shortly.",
     "⏳ 每分钟只能用一次 /summary，请稍后再试。"),
    ("Nothing to catch up on since your last message.", "自你上一条消息以来没有新内容。"),
    ("Nothing to catch up on {what}.", "{what}没有需要补看的内容。"),
    ("🧾 What you missed since your last message ({n} messages):",
     "🧾 自你上一条消息以来你错过的内容（{n} 条消息）："),
    ("🧾 What you missed {what} ({n} messages):", "🧾 你错过的内容：{what}（{n} 条消息）："),
    ("📬 {name}, I sent you the summary privately.", "📬 {name}，我已私信你摘要。"),
    # streaming
    ("⚠️ The answer was cut off: the connection to the model broke.",
     "⚠️ 回答被中断：与模型的连接断开了。"),
    # /status and /usage
    ("📊 Context {g}", "📊 上下文 {g}"),
    ("Tokens: {u} / {w}", "Tokens：{u} / {w}"),
    ("Compaction before a reply at {t} (threshold {p}); background hygiene at {h} "
     "(hygiene_threshold {q})",
     "回复前在 {t} 时压缩（阈值 {p}）；后台整理在 {h} 时进行（hygiene_threshold {q}）"),
    ("Memory: nothing remembered yet", "记忆：尚无记录"),
    ("Memory: {rest}", "记忆：{rest}"),
    ("Messages: {a} active, {b} archived", "消息：{a} 条活跃，{b} 条已归档"),
    ("Compactions: {n}", "压缩次数：{n}"),
    ("Last compaction: {rest}", "上次压缩：{rest}"),
    ("Breaker: ok", "断路器：正常"),
    ("Breaker: automatic compaction paused until {t}", "断路器：自动压缩暂停至 {t}"),
    ("📈 Usage (UTC)", "📈 用量（UTC）"),
    ("Today: {rest}", "今天：{rest}"),
    ("This month: {rest}", "本月：{rest}"),
    ("The model returned an empty answer. Your message is saved; please ask again.",
     "模型返回了空回答。你的消息已保存；请再问一次。"),
    ("⏩ I fell behind, so I'm answering the last {n} questions together.",
     "⏩ 我跟不上了，所以把最近的 {n} 个问题一起回答。"),
    # /help
    ("Commands:", "命令："),
    ("/status — context gauge, compactions, memory, breaker state",
     "/status — 上下文用量、压缩次数、记忆、断路器状态"),
    ("/compress [focus] — compact older history now (/compact; --show prints the summary)",
     "/compress [重点] — 立即压缩较早的历史（/compact；--show 显示摘要）"),
    ("/new — start a new conversation (/reset); the old one stays searchable",
     "/new — 开始新对话（/reset）；旧对话仍可搜索"),
    ("/config [key [value|default]] — per-chat settings",
     "/config [键 [值|default]] — 本聊天的设置"),
    ("/pin <text> — keep a fact verbatim forever · /pins · /unpin N",
     "/pin <文本> — 永久原样保留一条事实 · /pins · /unpin N"),
    ("/usage — tokens used today and this month", "/usage — 今天和本月使用的 tokens"),
    ("/summary [2h|@name|topic] — what you missed since your last message (/catchup)",
     "/summary [2h|@名字|话题] — 自你上一条消息以来错过的内容（/catchup）"),
    ("/console — a one-time sign-in link to the web console, sent to you privately (admins)",
     "/console — 网页控制台的一次性登录链接，私下发给你（管理员）"),
    ("/forget — (as a reply) erase your message · /forget all — everything you wrote here · "
     "/purge", "/forget —（回复时）删除你的消息 · /forget all — 删除你在这里写的全部 · /purge"),
    # /console
    ("The web console is not enabled on this bot.", "此机器人未启用网页控制台。"),
    ("Use the /console slash command: its answer is shown to you alone.",
     "请使用 /console 斜杠命令：它的回复只有你能看到。"),
    ("I can't message you privately. Start a private chat with me, then send /console here again.",
     "我无法私下给你发消息。请先和我开始私聊，然后在这里再发送一次 /console。"),
    ("📬 {name}, I sent you a sign-in link privately.", "📬 {name}，我已私下把登录链接发给你。"),
    ("🔑 Web console for this chat, valid for {m} minutes and for one sign-in: {link}",
     "🔑 本聊天的网页控制台，{m} 分钟内有效，只能登录一次：{link}"),
    ("In groups, /compress, /new, /config with a value, /pin and /unpin need chat-admin rights.",
     "在群组中，/compress、/new、带值的 /config、/pin 和 /unpin 需要管理员权限。"),
)
# fmt: on


@dataclass(frozen=True, slots=True)
class _Template:
    pattern: re.Pattern[str]
    target: str


def _compile(english: str, target: str) -> _Template:
    parts: list[str] = []
    last = 0
    for match in _PLACEHOLDER.finditer(english):
        parts.append(re.escape(english[last : match.start()]))
        parts.append(f"(?P<{match.group(1)}>.+?)")
        last = match.end()
    parts.append(re.escape(english[last:]))
    return _Template(re.compile("^" + "".join(parts) + "$"), target)


_CATALOG: Mapping[Language, tuple[_Template, ...]] = {
    CHINESE: tuple(_compile(en, zh) for en, zh in _TEMPLATES),
}


def language_for(setting: str, platform_code: str | None) -> Language:
    """The chat's `language` setting wins; with "auto", the members' platform language code."""
    chosen = setting if setting.lower() != "auto" else (platform_code or "")
    head = chosen.strip().lower().replace("_", "-").split("-")[0]
    return CHINESE if head in _CHINESE_NAMES else ENGLISH


def localize(text: str, language: Language) -> str:
    """`text` with every line the catalog knows translated; others unchanged."""
    templates = _CATALOG.get(language)
    if not templates:
        return text
    return "\n".join(_translate_line(line, templates) or line for line in text.split("\n"))


def localize_trailer(text: str, trailer: str, language: Language) -> str:
    """Model output that ends with one of our notices: only the notice is translated."""
    if not text.endswith(trailer):
        return text
    return text[: len(text) - len(trailer)] + localize(trailer, language)


def _translate_line(line: str, templates: tuple[_Template, ...]) -> str | None:
    for template in templates:
        match = template.pattern.match(line)
        if match is not None:
            return template.target.format(**match.groupdict())
    return None
