"""Summaries written by the model: of documents, for the router, and of sections, one prompt per language (detected
from the section's text), for the tree index."""

SUMMARIZE_SYSTEM = """You catalogue documents for a search system. From the beginning of a document and its outline,
say what kind of document it is, summarise what it covers in two to four sentences, list its key topics, and say
which questions it is the right source for. Use only what the text shows."""

SUMMARIZE_DOCUMENT = """File: {name} ({kind})
Title: {title}
Outline:
{outline}

Beginning of the text:
{text}"""

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
