//! Which callers a flow rule limits: Sentinel's `limitApp` on flow rules.

/// The callers a [`FlowRule`](crate::rules::FlowRule) limits, by the origin of their calls
/// ([`EntryBuilder::origin`](crate::EntryBuilder::origin), the tower layer's `.origin(..)`, or
/// the [origin scope](crate::context) the call runs in). Sentinel's `limitApp`.
///
/// * [`All`](FlowOrigin::All) (the default, Sentinel's `"default"`): every call counts, whatever
///   its origin, all together.
/// * [`Named`](FlowOrigin::Named) (`.origin("appA")`): only calls of that origin (trimmed,
///   ignoring ASCII case, as authority rules match) count, against their own threshold; other
///   calls pass this rule.
/// * [`Other`](FlowOrigin::Other) (`.other_origins()`, Sentinel's `"other"`): every call with
///   an origin that no other flow rule of the resource names; **each origin counted on its
///   own** (a threshold per origin), in a table of at most [`MAX_TRACKED_ORIGINS`] origins, so
///   a flood of new origins cannot grow memory (an origin forgotten for room keeps its debt,
///   as hotspot values do). A call without an origin passes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum FlowOrigin {
    /// Every caller, counted together.
    #[default]
    All,
    /// The calls of one origin.
    Named(String),
    /// Each origin that no other flow rule of the resource names, counted on its own.
    Other,
}

/// How many origins an [`Other`](FlowOrigin::Other) rule tracks at once.
pub const MAX_TRACKED_ORIGINS: usize = 4_096;

impl FlowOrigin {
    /// Reads Sentinel's `limitApp` (and our files' `origin`): `"default"` is
    /// [`All`](Self::All), `"other"` is [`Other`](Self::Other), anything else names an origin
    /// (trimmed).
    pub fn from_limit_app(limit_app: &str) -> FlowOrigin {
        match limit_app.trim() {
            "default" => FlowOrigin::All,
            "other" => FlowOrigin::Other,
            name => FlowOrigin::Named(name.to_owned()),
        }
    }

    /// The origin as Sentinel's `limitApp` (and our files' `origin`) write it.
    pub fn as_limit_app(&self) -> &str {
        match self {
            FlowOrigin::All => "default",
            FlowOrigin::Named(name) => name,
            FlowOrigin::Other => "other",
        }
    }

    /// Whether this is [`All`](Self::All).
    pub fn is_all(&self) -> bool {
        *self == FlowOrigin::All
    }

    /// The origin named, if this names one.
    pub(crate) fn named(&self) -> Option<&str> {
        match self {
            FlowOrigin::Named(name) => Some(name.trim()),
            _ => None,
        }
    }
}

/// Whether a call's `origin` is `name`: trimmed, ignoring ASCII case.
pub(crate) fn same_origin(origin: &str, name: &str) -> bool {
    origin.trim().eq_ignore_ascii_case(name.trim())
}
