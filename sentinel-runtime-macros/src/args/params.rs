//! The hotspot parameters: `params = [...]` and `hotspot(param = ...)` name the function's
//! arguments whose values rules limit one by one.

use syn::{Expr, ExprPath, Ident};

use crate::errors::Errors;

/// A function argument's name in `params = [...]` or `hotspot(param = ...)`.
pub(super) fn param_name(value: &Expr, errors: &mut Errors) -> Option<Ident> {
    match value {
        Expr::Path(ExprPath {
            qself: None, path, ..
        }) if path.get_ident().is_some() => path.get_ident().cloned(),
        other => {
            errors.at(
                other,
                "expected the name of one of the function's arguments, like `user_id`",
            );
            None
        }
    }
}

/// `params = [a, b]`: arguments passed as hotspot parameters.
pub(super) fn param_list(value: &Expr, mentions: &mut Vec<Ident>, errors: &mut Errors) {
    let Expr::Array(list) = value else {
        errors.at(
            value,
            "`params` expects a list of argument names, like `params = [user_id, region]`",
        );
        return;
    };
    let mut listed: Vec<Ident> = Vec::new();
    for item in &list.elems {
        if let Some(name) = param_name(item, errors) {
            if listed.contains(&name) {
                errors.at(&name, format!("`{name}` is listed twice in `params`"));
                continue;
            }
            listed.push(name.clone());
            mentions.push(name);
        }
    }
}
