"""Prompts for section summaries of the tree index, one per language (detected from the section's text)."""

NODE_SUMMARY_SYSTEM = {
    "en": """You summarise one section of a document in two or three sentences: what it covers and the key facts it
holds (names, numbers, dates, codes), so that a reader can tell whether the section answers their question. Reply
with the summary only.""",
    "zh": """你为文档中的一个章节写两到三句摘要：它讲了什么，包含哪些关键事实（名称、数字、日期、代码），让读者能判断该章节是否能回答他们的问题。只回复摘要，使用中文。""",
}

NODE_SUMMARY_REQUEST = {
    "en": """Section: {title}

{content}""",
    "zh": """章节：{title}

{content}""",
}
