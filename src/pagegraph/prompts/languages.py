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

# How an answer's band (state.answering.Band) is named beside it, in the languages measured (else in English).
BAND_TEXTS = {
    "en": {
        "supported": "supported by the cited sentences",
        "uncertain": "uncertain — check the evidence before relying on it",
        "not_found": "not found in the documents",
        "quoted": "quoted from the document",
    },
    "ar": {
        "supported": "مدعومة بالجمل المستشهد بها",
        "uncertain": "غير مؤكدة — تحقق من الأدلة قبل الاعتماد عليها",
        "not_found": "غير موجودة في المستندات",
        "quoted": "مقتبس من المستند",
    },
    "de": {
        "supported": "durch die zitierten Sätze belegt",
        "uncertain": "unsicher — prüfen Sie die Belege, bevor Sie sich darauf verlassen",
        "not_found": "nicht in den Dokumenten gefunden",
        "quoted": "aus dem Dokument zitiert",
    },
    "el": {
        "supported": "τεκμηριώνεται από τις προτάσεις που παρατίθενται",
        "uncertain": "αβέβαιη — ελέγξτε τα στοιχεία πριν βασιστείτε σε αυτή",
        "not_found": "δεν βρέθηκε στα έγγραφα",
        "quoted": "παράθεση από το έγγραφο",
    },
    "es": {
        "supported": "respaldada por las frases citadas",
        "uncertain": "incierta — compruebe la evidencia antes de confiar en ella",
        "not_found": "no se encuentra en los documentos",
        "quoted": "citado del documento",
    },
    "hi": {
        "supported": "उद्धृत वाक्यों से समर्थित",
        "uncertain": "अनिश्चित — इस पर भरोसा करने से पहले साक्ष्य जाँचें",
        "not_found": "दस्तावेज़ों में नहीं मिला",
        "quoted": "दस्तावेज़ से उद्धृत",
    },
    "ro": {
        "supported": "susținut de propozițiile citate",
        "uncertain": "nesigur — verificați dovezile înainte de a vă baza pe el",
        "not_found": "nu a fost găsit în documente",
        "quoted": "citat din document",
    },
    "ru": {
        "supported": "подтверждается цитируемыми предложениями",
        "uncertain": "не наверняка — проверьте источники, прежде чем полагаться на ответ",
        "not_found": "не найдено в документах",
        "quoted": "цитата из документа",
    },
    "th": {
        "supported": "มีประโยคที่อ้างอิงสนับสนุน",
        "uncertain": "ไม่แน่นอน — ตรวจสอบหลักฐานก่อนนำไปใช้",
        "not_found": "ไม่พบในเอกสาร",
        "quoted": "อ้างอิงจากเอกสาร",
    },
    "tr": {
        "supported": "alıntılanan cümlelerle destekleniyor",
        "uncertain": "belirsiz — güvenmeden önce kanıtları kontrol edin",
        "not_found": "belgelerde bulunamadı",
        "quoted": "belgeden alıntı",
    },
    "vi": {
        "supported": "được các câu trích dẫn hỗ trợ",
        "uncertain": "không chắc chắn — hãy kiểm tra bằng chứng trước khi dựa vào",
        "not_found": "không tìm thấy trong tài liệu",
        "quoted": "trích từ tài liệu",
    },
    "zh": {
        "supported": "有引用的句子支持",
        "uncertain": "不确定 — 请先核对证据再采用",
        "not_found": "文档中未找到",
        "quoted": "引自文档",
    },
}
