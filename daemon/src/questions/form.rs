//! A question's form: MCP elicitation's restricted schema (a flat object
//! of string, number, integer, boolean and enum properties) read into
//! fields, and an answer's content checked against them. Pure.

use serde_json::{Map, Value};

/// What a field accepts.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Text {
        min_length: Option<u64>,
        max_length: Option<u64>,
        format: Option<String>,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Boolean,
    /// One of `options` (or any text when `other`).
    Choice {
        options: Vec<Choice>,
        other: bool,
    },
    /// A list of `options`.
    Choices {
        options: Vec<Choice>,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
}

/// One value a choice offers, and what to show for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub value: String,
    pub label: Option<String>,
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub kind: FieldKind,
    pub required: bool,
    pub default: Option<Value>,
}

/// The fields of one question, in the order the schema lists them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Form {
    pub fields: Vec<Field>,
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn choices_of(prop: &Value) -> Option<Vec<Choice>> {
    // `enum` (with the legacy `enumNames`), or `oneOf`/`anyOf` of
    // `{const, title}` (SEP-1330).
    if let Some(values) = prop.get("enum").and_then(Value::as_array) {
        let names = prop.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                Some(Choice {
                    value: v.as_str()?.to_owned(),
                    label: names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    description: None,
                })
            })
            .collect();
    }
    let list = prop
        .get("oneOf")
        .or_else(|| prop.get("anyOf"))
        .and_then(Value::as_array)?;
    list.iter()
        .map(|c| {
            Some(Choice {
                value: c.get("const")?.as_str()?.to_owned(),
                label: text(c, "title"),
                description: text(c, "description"),
            })
        })
        .collect()
}

impl Form {
    /// Reads an elicitation's `requestedSchema`; what the restricted
    /// schema does not allow is an error naming the property.
    pub fn from_schema(schema: &Value) -> Result<Form, String> {
        let empty = Map::new();
        let props = match schema.get("properties") {
            None => &empty,
            Some(Value::Object(p)) => p,
            Some(_) => return Err("`properties` is not an object".into()),
        };
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut fields = Vec::new();
        for (name, prop) in props {
            let kind = match prop.get("type").and_then(Value::as_str) {
                Some("string") => match choices_of(prop) {
                    Some(options) => FieldKind::Choice {
                        options,
                        other: false,
                    },
                    None => FieldKind::Text {
                        min_length: prop.get("minLength").and_then(Value::as_u64),
                        max_length: prop.get("maxLength").and_then(Value::as_u64),
                        format: text(prop, "format"),
                    },
                },
                Some(t @ ("number" | "integer")) => FieldKind::Number {
                    integer: t == "integer",
                    minimum: prop.get("minimum").and_then(Value::as_f64),
                    maximum: prop.get("maximum").and_then(Value::as_f64),
                },
                Some("boolean") => FieldKind::Boolean,
                Some("array") => {
                    let options = prop.get("items").and_then(choices_of).ok_or_else(|| {
                        format!("property `{name}`: an array must list its items' values")
                    })?;
                    FieldKind::Choices {
                        options,
                        min_items: prop.get("minItems").and_then(Value::as_u64),
                        max_items: prop.get("maxItems").and_then(Value::as_u64),
                    }
                }
                None if choices_of(prop).is_some() => FieldKind::Choice {
                    options: choices_of(prop).unwrap_or_default(),
                    other: false,
                },
                other => {
                    return Err(format!(
                        "property `{name}`: type {} is not one a question can ask",
                        other.map_or("(none)".to_owned(), |t| format!("`{t}`"))
                    ));
                }
            };
            fields.push(Field {
                name: name.clone(),
                title: text(prop, "title"),
                description: text(prop, "description"),
                kind,
                required: required.contains(&name.as_str()),
                default: prop.get("default").cloned(),
            });
        }
        Ok(Form { fields })
    }

    /// Every field's default, for an answer that takes them all.
    pub fn defaults(&self) -> Map<String, Value> {
        self.fields
            .iter()
            .filter_map(|f| Some((f.name.clone(), f.default.clone()?)))
            .collect()
    }

    /// Checks an `accept`'s content: an object whose keys are fields and
    /// whose values fit them; a missing field takes its default, a missing
    /// required one without a default is an error. Returns the content
    /// the asker gets.
    pub fn check(&self, content: Option<&Value>) -> Result<Map<String, Value>, String> {
        let given = match content {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(_) => return Err("`content` must be an object of field values".into()),
        };
        if let Some(unknown) = given
            .keys()
            .find(|k| !self.fields.iter().any(|f| &f.name == *k))
        {
            return Err(format!("`{unknown}` is not a field of this question"));
        }
        let mut out = Map::new();
        for field in &self.fields {
            let value = match given.get(&field.name).or(field.default.as_ref()) {
                Some(v) => v,
                None if field.required => {
                    return Err(format!("`{}` is required", field.name));
                }
                None => continue,
            };
            check_value(field, value).map_err(|why| format!("`{}`: {why}", field.name))?;
            out.insert(field.name.clone(), value.clone());
        }
        Ok(out)
    }
}

fn check_value(field: &Field, value: &Value) -> Result<(), String> {
    match &field.kind {
        FieldKind::Text {
            min_length,
            max_length,
            format,
        } => {
            let s = value.as_str().ok_or("must be text")?;
            let len = s.chars().count() as u64;
            if min_length.is_some_and(|m| len < m) || max_length.is_some_and(|m| len > m) {
                return Err(format!(
                    "must be {}..{} characters long",
                    min_length.unwrap_or(0),
                    max_length.map_or("".to_owned(), |m| m.to_string())
                ));
            }
            if let Some(format) = format {
                check_format(format, s)?;
            }
            Ok(())
        }
        FieldKind::Number {
            integer,
            minimum,
            maximum,
        } => {
            let n = value.as_f64().ok_or("must be a number")?;
            if *integer && (n.fract() != 0.0 || !n.is_finite()) {
                return Err("must be a whole number".into());
            }
            if minimum.is_some_and(|m| n < m) || maximum.is_some_and(|m| n > m) {
                return Err(format!(
                    "must be between {} and {}",
                    minimum.map_or("-inf".to_owned(), |m| m.to_string()),
                    maximum.map_or("inf".to_owned(), |m| m.to_string())
                ));
            }
            Ok(())
        }
        FieldKind::Boolean => value
            .as_bool()
            .map(|_| ())
            .ok_or("must be true or false".into()),
        FieldKind::Choice { options, other } => {
            let s = value.as_str().ok_or("must be text")?;
            if *other || options.iter().any(|o| o.value == s) {
                Ok(())
            } else {
                Err(format!("must be one of {}", list(options)))
            }
        }
        FieldKind::Choices {
            options,
            min_items,
            max_items,
        } => {
            let items = value.as_array().ok_or("must be a list")?;
            let n = items.len() as u64;
            if min_items.is_some_and(|m| n < m) || max_items.is_some_and(|m| n > m) {
                return Err(format!(
                    "must list {}..{} values",
                    min_items.unwrap_or(0),
                    max_items.map_or("".to_owned(), |m| m.to_string())
                ));
            }
            for item in items {
                let s = item.as_str().ok_or("must list text values")?;
                if !options.iter().any(|o| o.value == s) {
                    return Err(format!("`{s}` is not one of {}", list(options)));
                }
            }
            Ok(())
        }
    }
}

fn list(options: &[Choice]) -> String {
    options
        .iter()
        .map(|o| format!("`{}`", o.value))
        .collect::<Vec<_>>()
        .join(", ")
}

fn check_format(format: &str, s: &str) -> Result<(), String> {
    if geminid_protocol::question::format_fits(format, s) {
        Ok(())
    } else {
        Err(format!("must be a valid {format}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn everything() -> Form {
        Form::from_schema(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name"},
                "check": {"type": "boolean"},
                "email": {"type": "string", "format": "email"},
                "integer": {"type": "integer", "minimum": 1, "maximum": 100, "default": 42},
                "pet": {"type": "string", "enum": ["pet-1", "pet-2"], "enumNames": ["Cats", "Dogs"], "default": "pet-1"},
                "hero": {"type": "string", "oneOf": [{"const": "hero-1", "title": "Superman"}]},
                "fish": {"type": "array", "minItems": 1, "items": {"anyOf": [{"const": "fish-1", "title": "Tuna"}, {"const": "fish-2"}]}, "default": ["fish-1"]}
            },
            "required": ["name"]
        }))
        .unwrap()
    }

    #[test]
    fn the_restricted_schema_becomes_fields_with_defaults_and_choices() {
        let form = everything();
        assert_eq!(form.fields.len(), 7);
        let pet = form.fields.iter().find(|f| f.name == "pet").unwrap();
        let FieldKind::Choice { options, other } = &pet.kind else {
            panic!("{pet:?}")
        };
        assert!(!other);
        assert_eq!(options[1].label.as_deref(), Some("Dogs"));
        assert!(
            form.fields
                .iter()
                .find(|f| f.name == "name")
                .unwrap()
                .required
        );
        assert_eq!(
            Value::Object(form.defaults()),
            json!({"integer": 42, "pet": "pet-1", "fish": ["fish-1"]})
        );
    }

    #[test]
    fn an_answer_takes_defaults_and_must_fit_every_field() {
        let form = everything();
        let content = form.check(Some(&json!({"name": "Ada"}))).unwrap();
        assert_eq!(content["integer"], 42);
        assert_eq!(content["name"], "Ada");
        assert!(!content.contains_key("check"));
        for (bad, says) in [
            (json!({}), "`name` is required"),
            (json!({"name": 3}), "`name`: must be text"),
            (
                json!({"name": "A", "integer": 101}),
                "`integer`: must be between 1 and 100",
            ),
            (
                json!({"name": "A", "integer": 2.5}),
                "`integer`: must be a whole number",
            ),
            (
                json!({"name": "A", "pet": "pet-9"}),
                "`pet`: must be one of `pet-1`, `pet-2`",
            ),
            (
                json!({"name": "A", "fish": []}),
                "`fish`: must list 1.. values",
            ),
            (
                json!({"name": "A", "fish": ["cod"]}),
                "`fish`: `cod` is not one of",
            ),
            (
                json!({"name": "A", "email": "nope"}),
                "`email`: must be a valid email",
            ),
            (
                json!({"name": "A", "color": "red"}),
                "`color` is not a field",
            ),
            (json!("Ada"), "must be an object"),
        ] {
            let err = form.check(Some(&bad)).unwrap_err();
            assert!(err.contains(says), "{bad} -> {err}");
        }
    }

    #[test]
    fn a_schema_outside_the_restricted_subset_is_refused_by_property() {
        let err =
            Form::from_schema(&json!({"properties": {"deep": {"type": "object"}}})).unwrap_err();
        assert!(err.contains("`deep`"), "{err}");
        assert_eq!(Form::from_schema(&json!({})).unwrap().fields.len(), 0);
    }
}
