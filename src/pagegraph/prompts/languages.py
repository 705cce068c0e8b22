"""The languages a question may be answered in (identified by `nodes.language`), and how an answer prompt asks for
one other than English."""

LANGUAGE_NAMES = {
    "ar": "Arabic",
    "bn": "Bengali",
    "cs": "Czech",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "es": "Spanish",
    "fa": "Persian",
    "fi": "Finnish",
    "fr": "French",
    "he": "Hebrew",
    "hi": "Hindi",
    "id": "Indonesian",
    "it": "Italian",
    "ja": "Japanese",
    "ko": "Korean",
    "ms": "Malay",
    "nl": "Dutch",
    "no": "Norwegian",
    "pl": "Polish",
    "pt": "Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "sv": "Swedish",
    "ta": "Tamil",
    "th": "Thai",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "ur": "Urdu",
    "vi": "Vietnamese",
    "zh": "Chinese",
}

# Added to an answer request when the question is not in English; a refusal stays the exact sentence the system
# prompt gives, which is how pagegraph recognises it.
ANSWER_LANGUAGE = (
    "The question is in {language}: write the answer in {language}, keeping names, figures and units as the "
    "evidence writes them and the passage numbers in square brackets. If you refuse, write the refusal sentence "
    "exactly as given, in English."
)
