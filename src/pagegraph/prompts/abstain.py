"""What pagegraph says when the documents do not hold the answer, in the question's language where it is one of the
languages measured (xquad's twelve), else in English. The reason, written in English by the stage that gave up, is
shown in the English message only (and is the run's `abstain_reason` in every language)."""

from typing import NamedTuple


class AbstainText(NamedTuple):
    message: str  # {reason} (English only: a refusal is written wholly in the question's language), {searched}, {hint}
    searched: str  # {documents}: the documents a routed search read
    passages_from: str  # {documents}: where the passages found came from
    ingest_hint: str
    name_hint: str
    quoted: str  # {sentence}, {label}: an evidence sentence quoted in place of the model's answer


ABSTAIN_TEXTS = {
    "en": AbstainText(
        "I could not answer this from the indexed documents: {reason}.\n{searched}{hint}",
        "Searched: {documents}.\n",
        "The passages found came from: {documents}.\n",
        "To get an answer, ingest a document that covers it (`pagegraph ingest PATH`) and ask again.",
        "If one of your documents covers it, ask again naming it (`--document NAME`) so that it alone is searched; "
        "otherwise ingest one that does (`pagegraph ingest PATH`).",
        "The document says: “{sentence}” {label}",
    ),
    "ar": AbstainText(
        "لم أتمكن من الإجابة عن هذا السؤال من المستندات المفهرسة.\n{searched}{hint}",
        "تم البحث في: {documents}.\n",
        "جاءت المقاطع التي عُثر عليها من: {documents}.\n",
        "للحصول على إجابة، أضف إلى الفهرس مستندًا يتناول ذلك (`pagegraph ingest PATH`) ثم اسأل مرة أخرى.",
        "إذا كان أحد مستنداتك يتناول ذلك، فاسأل مرة أخرى مع ذكر اسمه (`--document NAME`) ليُبحث فيه وحده؛ "
        "وإلا فأضف إلى الفهرس مستندًا يتناوله (`pagegraph ingest PATH`).",
        "يقول المستند: «{sentence}» {label}",
    ),
    "de": AbstainText(
        "Ich konnte diese Frage nicht aus den indexierten Dokumenten beantworten.\n{searched}{hint}",
        "Durchsucht: {documents}.\n",
        "Die gefundenen Passagen stammen aus: {documents}.\n",
        "Um eine Antwort zu erhalten, nehmen Sie ein Dokument auf, das dies behandelt (`pagegraph ingest PATH`), und "
        "fragen Sie erneut.",
        "Falls eines Ihrer Dokumente dies behandelt, fragen Sie erneut und nennen Sie es (`--document NAME`), damit "
        "nur es durchsucht wird; andernfalls nehmen Sie eines auf, das es behandelt (`pagegraph ingest PATH`).",
        "Im Dokument steht: „{sentence}“ {label}",
    ),
    "el": AbstainText(
        "Δεν μπόρεσα να απαντήσω σε αυτό από τα ευρετηριασμένα έγγραφα.\n{searched}{hint}",
        "Αναζητήθηκαν: {documents}.\n",
        "Τα αποσπάσματα που βρέθηκαν προέρχονται από: {documents}.\n",
        "Για να λάβετε απάντηση, προσθέστε ένα έγγραφο που το καλύπτει (`pagegraph ingest PATH`) και ρωτήστε ξανά.",
        "Αν κάποιο από τα έγγραφά σας το καλύπτει, ρωτήστε ξανά αναφέροντας το όνομά του (`--document NAME`) ώστε "
        "να αναζητηθεί μόνο αυτό· διαφορετικά προσθέστε ένα που το καλύπτει (`pagegraph ingest PATH`).",
        "Το έγγραφο αναφέρει: «{sentence}» {label}",
    ),
    "es": AbstainText(
        "No pude responder a esto con los documentos indexados.\n{searched}{hint}",
        "Se buscó en: {documents}.\n",
        "Los pasajes encontrados provienen de: {documents}.\n",
        "Para obtener una respuesta, indexe un documento que lo trate (`pagegraph ingest PATH`) y vuelva a preguntar.",
        "Si uno de sus documentos lo trata, vuelva a preguntar nombrándolo (`--document NAME`) para que solo se "
        "busque en él; si no, indexe uno que lo trate (`pagegraph ingest PATH`).",
        "El documento dice: «{sentence}» {label}",
    ),
    "hi": AbstainText(
        "मैं अनुक्रमित दस्तावेज़ों से इसका उत्तर नहीं दे सका।\n{searched}{hint}",
        "खोजे गए दस्तावेज़: {documents}।\n",
        "मिले हुए अंश इनसे आए: {documents}।\n",
        "उत्तर पाने के लिए ऐसा दस्तावेज़ जोड़ें जिसमें यह विषय हो (`pagegraph ingest PATH`) और फिर से पूछें।",
        "यदि आपके किसी दस्तावेज़ में यह विषय है, तो उसका नाम लेकर फिर से पूछें (`--document NAME`) ताकि केवल उसी "
        "में खोजा जाए; अन्यथा ऐसा दस्तावेज़ जोड़ें जिसमें यह विषय हो (`pagegraph ingest PATH`)।",
        "दस्तावेज़ में लिखा है: “{sentence}” {label}",
    ),
    "ro": AbstainText(
        "Nu am putut răspunde la aceasta din documentele indexate.\n{searched}{hint}",
        "Căutat în: {documents}.\n",
        "Pasajele găsite provin din: {documents}.\n",
        "Pentru un răspuns, indexați un document care tratează subiectul (`pagegraph ingest PATH`) și întrebați din "
        "nou.",
        "Dacă unul dintre documentele dvs. tratează subiectul, întrebați din nou numindu-l (`--document NAME`), ca să "
        "se caute doar în el; altfel indexați unul care îl tratează (`pagegraph ingest PATH`).",
        "Documentul spune: „{sentence}” {label}",
    ),
    "ru": AbstainText(
        "Не удалось ответить на этот вопрос по проиндексированным документам.\n{searched}{hint}",
        "Просмотрены: {documents}.\n",
        "Найденные фрагменты взяты из: {documents}.\n",
        "Чтобы получить ответ, добавьте в индекс документ, где об этом говорится (`pagegraph ingest PATH`), и "
        "спросите снова.",
        "Если об этом говорится в одном из ваших документов, спросите снова, назвав его (`--document NAME`), чтобы "
        "искать только в нём; иначе добавьте в индекс документ, где об этом говорится (`pagegraph ingest PATH`).",
        "В документе сказано: «{sentence}» {label}",
    ),
    "th": AbstainText(
        "ไม่สามารถตอบคำถามนี้จากเอกสารที่จัดทำดัชนีไว้ได้\n{searched}{hint}",
        "ค้นหาใน: {documents}\n",
        "ข้อความที่พบมาจาก: {documents}\n",
        "หากต้องการคำตอบ ให้เพิ่มเอกสารที่มีเรื่องนี้ (`pagegraph ingest PATH`) แล้วถามอีกครั้ง",
        "หากเอกสารของคุณฉบับใดมีเรื่องนี้ ให้ถามอีกครั้งโดยระบุชื่อเอกสาร (`--document NAME`) เพื่อค้นหาเฉพาะในเอกสารนั้น "
        "มิฉะนั้นให้เพิ่มเอกสารที่มีเรื่องนี้ (`pagegraph ingest PATH`)",
        "เอกสารระบุว่า: “{sentence}” {label}",
    ),
    "tr": AbstainText(
        "Bunu dizine eklenmiş belgelerden yanıtlayamadım.\n{searched}{hint}",
        "Aranan belgeler: {documents}.\n",
        "Bulunan pasajların kaynağı: {documents}.\n",
        "Yanıt almak için bu konuyu içeren bir belgeyi dizine ekleyin (`pagegraph ingest PATH`) ve yeniden sorun.",
        "Belgelerinizden biri bu konuyu içeriyorsa, yalnızca onda aranması için adını vererek yeniden sorun "
        "(`--document NAME`); aksi hâlde bu konuyu içeren bir belgeyi dizine ekleyin (`pagegraph ingest PATH`).",
        "Belgede şöyle yazıyor: “{sentence}” {label}",
    ),
    "vi": AbstainText(
        "Tôi không thể trả lời câu hỏi này từ các tài liệu đã lập chỉ mục.\n{searched}{hint}",
        "Đã tìm trong: {documents}.\n",
        "Các đoạn tìm được lấy từ: {documents}.\n",
        "Để có câu trả lời, hãy thêm một tài liệu có nội dung này (`pagegraph ingest PATH`) rồi hỏi lại.",
        "Nếu một trong các tài liệu của bạn có nội dung này, hãy hỏi lại và nêu tên tài liệu đó (`--document NAME`) "
        "để chỉ tìm trong nó; nếu không, hãy thêm một tài liệu có nội dung này (`pagegraph ingest PATH`).",
        "Tài liệu viết: “{sentence}” {label}",
    ),
    "zh": AbstainText(
        "无法根据已索引的文档回答这个问题。\n{searched}{hint}",
        "已搜索：{documents}。\n",
        "找到的段落来自：{documents}。\n",
        "如需答案，请导入包含相关内容的文档（`pagegraph ingest PATH`）后再问。",
        "如果您的某个文档包含相关内容，请指明该文档再问一次（`--document NAME`），以便只搜索该文档；否则请导入包含相关内容的文档"
        "（`pagegraph ingest PATH`）。",
        "文档中写道：“{sentence}” {label}",
    ),
}
