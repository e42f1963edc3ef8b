//! The rule types' `Serialize` and `Deserialize`, through their file shapes: each rule type
//! stays plain data, and each kind's `file` module declares its shape (a serde `remote` mirror:
//! the compiler refuses a mirror that misses or misnames a field of its rule type).

/// `Serialize` and `Deserialize` for each rule type, through its file shape.
macro_rules! through {
    ($($data:ty => $file:ident),* $(,)?) => {$(
        impl serde::Serialize for $data {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $file::serialize(self, s)
            }
        }

        impl<'de> serde::Deserialize<'de> for $data {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$data, D::Error> {
                $file::deserialize(d)
            }
        }
    )*};
}

pub(crate) use through;
