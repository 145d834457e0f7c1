//! A choice of a run (`data.task`, `model.norm`, `train.optimizer`...) declared once: the
//! enum, the word a run block writes for each value, and `ALL`, built from the same list,
//! so that no value can be missing from what the numerics probe and the tests walk.

/// Declares a choice: `pub enum Name { Variant = "word", ... }`, with each variant's doc
/// comments and `#[default]` as usual. Gives the enum serde's words, `Name::ALL` (every
/// value, in the order written) and `Name::name()` (the word).
#[macro_export]
macro_rules! choice {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $word:literal, )+
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $word)] $variant, )+
        }

        impl $name {
            /// Every value, in the order the guide lists them.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The value as a run block writes it.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }
        }
    };
}
