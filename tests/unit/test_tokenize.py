"""BM25's words in every script: words where a script puts spaces between them, overlapping character pairs where it
does not; NFKC and case folding first. And highlight sentences split on each script's own stops."""

from __future__ import annotations

from pagegraph.config import ReadingKnobs
from pagegraph.text.sentences import sentences
from pagegraph.text.words import tokenize


def test_english_words_lower_cased_without_stopwords_and_single_letters() -> None:
    assert tokenize("The SB-40 weighs 98 kg, and a 5 is fine.") == ["sb", "40", "weighs", "98", "kg", "5", "fine"]


def test_text_is_normalised_and_case_folded_first() -> None:
    assert tokenize("The ﬁnal Straße, ＡＢＣ１２") == ["final", "strasse", "abc12"]
    assert tokenize("ΟΔΥΣΣΕΑΣ") == tokenize("οδυσσεας")


def test_scripts_with_spaces_keep_their_words_marks_and_all() -> None:
    assert tokenize("सुपर बाउल 50 एक अमेरिकी फुटबॉल खेल था") == [
        "सुपर", "बाउल", "50", "एक", "अमेरिकी", "फुटबॉल", "खेल", "था",
    ]  # fmt: skip
    assert tokenize("Супербоул 50 был матчем") == ["супербоул", "50", "был", "матчем"]
    assert tokenize("مباراة كرة القدم") == ["مباراة", "كرة", "القدم"]


def test_chinese_and_japanese_become_overlapping_character_pairs() -> None:
    assert tokenize("美式足球比赛") == ["美式", "式足", "足球", "球比", "比赛"]
    assert tokenize("GPT4模型，是") == ["gpt4", "模型", "是"]  # a character alone stays
    assert tokenize("東京タワー") == ["東京", "京タ", "タワ", "ワー"]
    # a question and the passage that answers it share pairs, whatever the words around them
    asked, passage = set(tokenize("足球比赛在哪里举行？")), set(tokenize("这场足球比赛在加州举行。"))
    assert {"足球", "比赛", "举行"} <= asked & passage


def test_thai_pairs_keep_each_character_with_its_marks() -> None:
    words = tokenize("การแข่งขันฟุตบอล")
    assert "แข่" in words and "ข่ง" in words  # the tone mark stays on its consonant
    assert all(len(word) >= 2 for word in words)


def test_sentences_split_on_each_scripts_stops() -> None:
    assert [s for _, s in sentences("超级碗50是一场美式足球比赛。它决定了冠军！谁赢了？", ReadingKnobs())] == [
        "超级碗50是一场美式足球比赛。",
        "它决定了冠军！",
        "谁赢了？",
    ]
    assert len(sentences("Супербоул 50 был матчем. Он определил чемпиона НФЛ.", ReadingKnobs())) == 2
    assert len(sentences("यह एक वाक्य है। यह दूसरा वाक्य है।", ReadingKnobs())) == 2
    assert [s for _, s in sentences("It weighs 98 kg. It is 1.2 m tall and e.g. grey.", ReadingKnobs())] == [
        "It weighs 98 kg.",
        "It is 1.2 m tall and e.g. grey.",
    ]
