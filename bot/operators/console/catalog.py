"""The console's Chinese texts, keyed by the English the pages are written in."""

from __future__ import annotations

# fmt: off
CHINESE_TEXTS: dict[str, str] = {
    # frame and navigation
    "Console": "控制台", "Skip to content": "跳到正文", "Main": "主导航", "Language": "语言",
    "Overview": "概览", "Usage": "用量", "Audit log": "审计日志", "Health": "健康状况",
    "Sign in": "登录", "Sign out": "退出", "operator": "运营者", "chat admin": "聊天管理员",
    "Pages": "分页", "Page {n}": "第 {n} 页", "Previous page": "上一页", "Next page": "下一页",
    "Newest": "最新", "Older": "更早", "Show": "显示", "Not possible": "无法完成",
    "Back to the overview": "返回概览",
    # signing in
    "Operator token": "运营者令牌",
    "Chat admins: send /console in your chat to get a one-time sign-in link.":
        "聊天管理员：在你的聊天中发送 /console，即可获得一次性登录链接。",
    "Sign in with a one-time link": "使用一次性链接登录",
    "This link signs you in as an admin of one chat. It works once.":
        "此链接让你以一个聊天的管理员身份登录，只能使用一次。",
    "That token is not valid.": "令牌无效。",
    "This sign-in link is not valid: it was used, or it expired.":
        "此登录链接无效：它已被使用或已过期。",
    "Too many sign-in attempts from your address; wait a minute.":
        "来自你的地址的登录尝试过多，请等一分钟。",
    "Sign in first.": "请先登录。",
    "This form has expired. Reload the page and try again.": "此表单已过期，请刷新页面后重试。",
    "You may not see this chat.": "你无权查看此聊天。",
    "There is no such chat.": "没有这个聊天。",
    "There is no such memory entry.": "没有这条记忆。",
    "Only operators may run the doctor.": "只有运营者可以运行诊断。",
    # overview
    "Chats": "聊天", "No chats yet.": "还没有聊天。", "Chat": "聊天", "Platform": "平台",
    "Context": "上下文", "Messages": "消息", "Last compaction": "上次压缩", "Breaker": "断路器",
    "Today": "今天", "{a} active, {b} archived": "{a} 条活跃，{b} 条已归档", "never": "从未",
    "tokens today against the budget": "今天的 token 用量与额度",
    "{a} of {b} tokens": "{a} / {b} tokens", "{a} tokens (no budget)": "{a} tokens（无额度）",
    "Model": "模型", "offline (built-in)": "离线（内置）", "endpoint": "接口",
    "window {n} tokens ({source})": "窗口 {n} tokens（{source}）",
    "Run the doctor's checks": "运行诊断检查",
    "{used} of {window} tokens": "{used} / {window} tokens",
    "compaction at {n}": "{n} 时压缩", "hygiene at {n}": "{n} 时预清理",
    "paused until {when}": "暂停至 {when}",
    "cooldown ({cause}) until {when}": "冷却（{cause}）至 {when}",
    "ok": "正常",
    # a chat
    "This chat": "此聊天", "Summary and history": "摘要与历史", "Memory": "记忆", "Search": "搜索",
    "Settings": "设置", "Session": "会话", "ended": "已结束", "Compactions": "压缩次数",
    "nothing remembered yet": "尚无记忆", "The summary the model sees": "模型看到的摘要",
    "role {role}, {n} tokens": "角色 {role}，{n} tokens",
    "No summary in the active transcript: the model sees the messages as they are.":
        "当前记录中没有摘要：模型看到的是原始消息。",
    "Compaction history": "压缩历史", "When": "时间", "Trigger": "触发", "Outcome": "结果",
    "Tokens before → after": "tokens 前 → 后", "Summary tokens": "摘要 tokens",
    "Summary calls": "摘要调用次数", "Cost (tokens)": "花费（tokens）", "Took": "耗时",
    "No compactions recorded yet.": "尚无压缩记录。", "Pins": "置顶事实",
    "No pins.": "没有置顶事实。",
    # memory
    "Kinds": "类别", "all": "全部", "Kind": "类别", "Entry": "条目", "Author": "作者",
    "Date": "日期",
    "Status": "状态", "Sources": "来源", "answer": "答案", "messages: {n}": "消息：{n}",
    "Hide superseded entries": "隐藏已被取代的条目",
    "Show superseded entries too": "也显示已被取代的条目",
    "Nothing remembered yet: memory is made when the chat is compacted.":
        "尚无记忆：聊天被压缩时才会形成记忆。",
    "Where this entry comes from": "这条记忆的来源",
    "{n} source messages are no longer in the store.": "有 {n} 条来源消息已不在存储中。",
    "archived": "已归档", "live": "活跃", "Back to the memory": "返回记忆",
    "participant": "参与者", "rule": "规则", "decision": "决定", "fact": "事实",
    "preference": "偏好", "action": "待办", "question": "问题", "link": "链接", "tool": "工具操作",
    "topic": "话题", "narrative": "备注",
    "current": "当前", "superseded": "已被取代", "resolved": "已解决", "done": "已完成",
    # search
    "Search the archive": "搜索归档", "Words or part of a word": "词语或词的一部分",
    "The newest {n} matches, archived messages included.": "最新的 {n} 条匹配，包括已归档的消息。",
    "Nothing found.": "没有找到。",
    # settings
    "Setting": "设置项", "Value": "值", "Allowed": "允许范围", "Change": "修改",
    "New value of {key}": "{key} 的新值", "Save": "保存", "Reset to default": "恢复默认",
    "operators only": "仅运营者", "set here": "本聊天设置", "inherited": "继承", "default": "默认",
    "Saved: {key}. It takes effect with the next message.": "已保存：{key}。从下一条消息起生效。",
    "Operators may use the whole range; chat admins stay within the operator's bounds.":
        "运营者可以使用完整范围；聊天管理员只能在运营者设定的范围内修改。",
    "You may change a setting within the operator's bounds.":
        "你可以在运营者设定的范围内修改设置。",
    "Recent changes": "最近的更改",
    # audit
    "Who": "谁", "What": "做了什么", "No changes recorded.": "没有更改记录。",
    "Every change made through the console, and every sign-in: who, what, when.":
        "通过控制台做的每一次更改和每一次登录：谁、做了什么、什么时候。",
    "sign in": "登录", "setting": "设置", "sign-in link issued": "发出登录链接",
    # usage
    "All chats": "全部聊天", "Period": "时间段", "{n} days": "{n} 天",
    "Tokens per day and purpose (UTC)": "每天各用途的 tokens（UTC）",
    "Tokens per day and purpose over {n} days; the table below has the numbers.":
        "{n} 天内每天各用途的 tokens；具体数字见下表。",
    "No model calls in this period.": "此时间段没有模型调用。", "Totals": "合计",
    "Purpose": "用途", "Tokens": "Tokens", "Model calls": "模型调用", "Per chat": "按聊天",
    "Per day": "按天", "Day": "日期", "{a} tokens, {b} calls": "{a} tokens，{b} 次调用",
    "replies": "回复", "summaries": "摘要", "media": "媒体",
    # purge (SPEC 16)
    "Forget and purge": "遗忘与清除", "Member id": "成员 id", "Purge": "清除", "purge": "清除",
    "Purge this member…": "清除这个成员…", "Purge this message…": "清除这条消息…",
    "Purge everything {name} wrote…": "清除 {name} 写的全部内容…",
    "Erase what a member wrote from this chat's history, search and memory, as /purge does. A "
    "single message: use the buttons beside it in the search results or under a memory entry's "
    "sources.":
        "像 /purge 一样，从本聊天的历史、搜索和记忆中删除某个成员写的内容。单条消息：使用搜索"
        "结果中或记忆条目来源下该消息旁的按钮。",
    "Purge: what will be erased": "清除：将被删除的内容",
    "This message will be erased everywhere this chat keeps it: the archive, the search index, "
    "its earlier versions, the memory entries made from it and every summary line that quotes it.":
        "这条消息将从本聊天保存它的所有地方删除：归档、搜索索引、它的早期版本、由它形成的记忆"
        "条目，以及引用它的每一行摘要。",
    "All {n} messages that member {member} wrote in this chat will be erased: from the archive, "
    "the search index, their earlier versions, the memory entries made from them and every "
    "summary line that quotes them.":
        "成员 {member} 在本聊天写的全部 {n} 条消息将被删除：包括归档、搜索索引、它们的早期版本、"
        "由它们形成的记忆条目，以及引用它们的每一行摘要。",
    "Nothing to purge: this chat keeps no message of member {member}.":
        "没有可清除的内容：本聊天没有保存成员 {member} 的消息。",
    "This cannot be undone, and it is written to the audit log.":
        "此操作无法撤销，并会记入审计日志。",
    "Erase this message": "删除这条消息", "Erase {n} messages": "删除 {n} 条消息",
    "Cancel": "取消",
    "Purged: {n} stored messages are gone from this chat's history, search and memory.":
        "已清除：{n} 条保存的消息已从本聊天的历史、搜索和记忆中移除。",
    "There is no such message in this chat.": "此聊天中没有这条消息。",
    "Only a message someone wrote can be purged on its own.":
        "只有成员或机器人写的消息可以单独清除。",
    "Choose a message or a member to purge.": "请选择要清除的消息或成员。",
    "A member id is one word, as /purge takes it.": "成员 id 是一个词，与 /purge 的参数相同。",
    # the summary's cap (SPEC 6.11), as /status says it
    "Must-show memory needs {need} tokens, over the cap of {cap}":
        "必须显示的记忆需要 {need} tokens，超出上限 {cap}",
    "Pins, rules, preferences and open action items need {need} tokens, over the summary's cap "
    "of {cap}: the summary shows what fits, recall finds the rest.":
        "置顶事实、规则、偏好和未完成的待办需要 {need} tokens，超出摘要的上限 {cap}：摘要只显示"
        "放得下的部分，其余可用 recall 找到。",
    # health
    "Readiness (/readyz)": "就绪检查（/readyz）",
    "Doctor (compactbot doctor)": "诊断（compactbot doctor）",
}
# fmt: on
