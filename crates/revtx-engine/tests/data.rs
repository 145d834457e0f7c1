//! Tests of `src/data.rs`.

use revtx_engine::data::*;
use revtx_engine::rng::Rng;

/// The chapter's two printed training examples, as the data code renders them.
#[test]
fn chapter_examples_encode_exactly() {
    let cases = [
        (
            "gfcdaaab",
            "g f c d a a a b | b a a a d c f g . . . . . . . .",
            "_ _ _ _ _ _ _ _ b a a a d c f g _ _ _ _ _ _ _ _ _",
        ),
        (
            "gjfgjhg",
            "g j f g j h g | g h j g f j g . . . . . . . . . .",
            "_ _ _ _ _ _ _ g h j g f j g _ _ _ _ _ _ _ _ _ _ _",
        ),
    ];
    for (s, input, target) in cases {
        let (x, y) = encode(
            &parse_letters(s).unwrap(),
            Alphabet::CHAPTER,
            25,
            Targets::Answer,
            0,
        );
        assert_eq!(render_row(&x), input);
        assert_eq!(render_row(&y), target);
    }
}

#[test]
fn all_positions_scores_input_letters_but_not_pads() {
    let (x, y) = encode(
        &parse_letters("abc").unwrap(),
        Alphabet::CHAPTER,
        10,
        Targets::AllPositions,
        0,
    );
    assert_eq!(render_row(&x), "a b c | c b a . . .");
    assert_eq!(render_row(&y), "b c | c b a _ _ _ _");
}

#[test]
fn offset_shifts_sequence_and_targets() {
    let (x, y) = encode(
        &parse_letters("ab").unwrap(),
        Alphabet::CHAPTER,
        9,
        Targets::Answer,
        3,
    );
    assert_eq!(render_row(&x), ". . . a b | b a .");
    assert_eq!(render_row(&y), "_ _ _ _ _ b a _ _");
}

#[test]
fn random_offsets_always_fit() {
    let mut rng = Rng::new(1);
    let b = training_batch(
        &mut rng,
        200,
        (3, 8),
        Alphabet::CHAPTER,
        25,
        Targets::Answer,
        true,
    );
    assert_eq!(b.x.len(), 200 * 25);
    let y = &b.y;
    let targeted_max = (0..200)
        .flat_map(|r| (0..25).filter(move |&t| y[r * 25 + t] != IGNORE))
        .max()
        .unwrap();
    assert!(
        targeted_max > 16,
        "offsets should reach positions the plain task never targets"
    );
}
