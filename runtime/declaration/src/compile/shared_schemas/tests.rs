//! `spec.schemas` through the whole compiler (what `tools/list` carries, what arguments pass)
//! and the bounds through [`SharedSchemas`] directly.

use super::*;
use crate::compile::tests::compiled;
use serde_json::json;

fn errors(spec: &str) -> Vec<String> {
    match compiled(spec) {
        Ok(_) => Vec::new(),
        Err(invalid) => invalid.errors.iter().map(ToString::to_string).collect(),
    }
}

const POD: &str = "  schemas:
    Pod: {type: object, properties: {meta: {$ref: '#/schemas/Meta'}, spec: {$ref: '#/schemas/Spec'}}}
    Meta: {type: object, properties: {name: {$ref: '#/schemas/Name'}}, required: [name]}
    Name: {type: string, maxLength: 8}
    Spec: {type: object, properties: {image: {type: string}}}
    Unused: {type: integer}
";

#[test]
fn a_tool_carries_the_shared_schemas_it_reaches_under_defs() {
    let c = compiled(&format!(
        "{POD}  tools:
  - name: create
    inputSchema: {{type: object, properties: {{pod: {{$ref: '#/schemas/Pod'}}, n: {{$ref: '#/schemas/Name'}}}}, required: [pod]}}
    outputSchema: {{$ref: '#/schemas/Meta'}}
    structuredContent: {{name: x}}
"
    ))
    .unwrap();
    let tool = &c.tools[0];
    let input = &tool.descriptor["inputSchema"];
    assert_eq!(input["properties"]["pod"], json!({"$ref": "#/$defs/Pod"}));
    let defs: Vec<&String> = input["$defs"].as_object().unwrap().keys().collect();
    assert_eq!(defs, ["Meta", "Name", "Pod", "Spec"]);
    assert_eq!(
        input["$defs"]["Meta"]["properties"]["name"],
        json!({"$ref": "#/$defs/Name"})
    );
    // A root that is only a reference is its target, so `type` and `properties` stay in sight.
    let output = &tool.descriptor["outputSchema"];
    assert_eq!(output["type"], "object");
    assert_eq!(
        output["$defs"],
        json!({"Name": {"type": "string", "maxLength": 8}})
    );
    // The arguments are validated against what the references mean.
    assert!(
        tool.input
            .is_valid(&json!({"pod": {"meta": {"name": "web"}}}))
    );
    assert!(
        !tool
            .input
            .is_valid(&json!({"pod": {"meta": {"name": "far-too-long"}}}))
    );
    assert!(!tool.input.is_valid(&json!({"pod": {"meta": {}}})));
}

#[test]
fn recursive_schemas_that_descend_are_served() {
    let c = compiled(
        "  schemas:
    Node: {type: object, properties: {children: {type: array, items: {$ref: '#/schemas/Node'}}, leaf: {$ref: '#/schemas/Leaf'}}}
    Leaf: {anyOf: [{type: string}, {$ref: '#/schemas/Node'}]}
  tools:
  - name: tree
    inputSchema: {type: object, properties: {root: {$ref: '#/schemas/Node'}}}
    content: [{type: text, text: ok}]
",
    )
    .unwrap();
    let input = &c.tools[0].input;
    assert!(input.is_valid(&json!({"root": {"children": [{"leaf": {"children": []}}]}})));
    assert!(!input.is_valid(&json!({"root": {"children": [{"leaf": 3}]}})));
}

#[test]
fn cycles_that_never_descend_are_refused_naming_the_path() {
    let found = errors(
        "  schemas:
    A: {allOf: [{$ref: '#/schemas/B'}]}
    B: {$ref: '#/schemas/A'}
    C: {$ref: '#/schemas/C'}
  tools:
  - {name: t, inputSchema: {type: object, properties: {a: {$ref: '#/schemas/A'}}}, content: [{type: text, text: ok}]}
",
    );
    assert_eq!(
        found,
        [
            "spec.schemas[B].$ref: the cycle A -> B -> A never descends into a property or an item, so validating against it would never end",
            "spec.schemas[C].$ref: the cycle C -> C never descends into a property or an item, so validating against it would never end",
        ]
    );
}

#[test]
fn unknown_and_foreign_references_are_refused() {
    let found = errors(
        "  schemas:
    A: {properties: {x: {$ref: '#/schemas/Nope'}}}
    B: {properties: {x: {$ref: '#/$defs/local'}}, $defs: {local: {type: string}}}
    C: {$id: 'https://example.com/c', type: string}
  tools:
  - {name: t, inputSchema: {type: object, properties: {a: {$ref: '#/schemas/Missing'}}}, content: [{type: text, text: ok}]}
",
    );
    assert_eq!(found.len(), 4, "{found:#?}");
    assert_eq!(
        found[0],
        "spec.schemas[A].properties.x.$ref: unknown shared schema `Nope` (not in spec.schemas)"
    );
    assert!(found[1].starts_with("spec.schemas[B].properties.x.$ref: `#/$defs/local`: a shared schema may refer only to other shared schemas"), "{}", found[1]);
    assert!(found[2].starts_with("spec.schemas[C].$id: is not allowed in a shared schema"));
    assert_eq!(
        found[3],
        "spec.tools[0].inputSchema.properties.a.$ref: unknown shared schema `Missing` (not in spec.schemas)"
    );
}

#[test]
fn a_reference_to_a_refused_schema_is_not_reported_twice() {
    let found = errors(
        "  schemas:
    'bad name': {type: string}
    A: {$ref: '#/schemas/A'}
  tools:
  - {name: t, inputSchema: {type: object, properties: {a: {$ref: '#/schemas/A'}}}, content: [{type: text, text: ok}]}
",
    );
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found[0].starts_with("spec.schemas[bad name]: a shared schema's name must be"));
    assert!(found[1].starts_with("spec.schemas[A].$ref: the cycle A -> A"));
}

#[test]
fn a_local_def_of_the_same_name_is_refused() {
    let found = errors(
        "  schemas: {Name: {type: string}}
  tools:
  - name: t
    inputSchema: {type: object, properties: {a: {$ref: '#/schemas/Name'}, b: {$ref: '#/$defs/Name'}}, $defs: {Name: {type: integer}}}
    content: [{type: text, text: ok}]
",
    );
    assert_eq!(
        found,
        [
            "spec.tools[0].inputSchema.$defs.Name: is also the name of a shared schema it uses (spec.schemas): rename one"
        ]
    );
}

#[test]
fn an_elicited_field_gets_its_shared_schema_inlined() {
    let c = compiled(
        "  schemas:
    Region: {type: string, enum: [eu, us]}
  tools:
  - name: t
    inputSchema: {type: object, properties: {region: {$ref: '#/schemas/Region'}}}
    elicit: [{name: region, schema: {$ref: '#/schemas/Region'}}]
    content: [{type: text, text: ok}]
",
    )
    .unwrap();
    let field = &c.tools[0].interaction.elicit[0];
    assert_eq!(
        field.schema,
        json!({"type": "string", "enum": ["eu", "us"]})
    );
}

#[test]
fn too_many_schemas_are_refused() {
    let declared: BTreeMap<String, Value> = (0..=MAX_SHARED_SCHEMAS)
        .map(|i| (format!("S{i}"), json!(true)))
        .collect();
    let mut errors = Vec::new();
    SharedSchemas::compile(&declared, &mut errors);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].path, "spec.schemas");
}

#[test]
fn what_one_schema_and_all_tools_carry_is_bounded() {
    // One shared schema just under the bound for one tool schema: a single tool may carry it,
    // but not enough tools to pass the bound for the whole declaration.
    let big = "x".repeat(MAX_REACHED_BYTES - 64);
    let declared = BTreeMap::from([
        ("Big".to_owned(), json!({"description": big})),
        (
            "Also".to_owned(),
            json!({"allOf": [{"$ref": "#/schemas/Big"}], "description": "x".repeat(64)}),
        ),
    ]);
    let mut errors = Vec::new();
    let mut shared = SharedSchemas::compile(&declared, &mut errors);
    assert!(errors.is_empty(), "{errors:?}");
    let uses = |name: &str| {
        json!({"type": "object", "properties": {"a": {"$ref": format!("#/schemas/{name}")}}})
            .as_object()
            .unwrap()
            .clone()
    };
    assert!(shared.resolve("one", &uses("Also"), &mut errors).is_none());
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0]
            .message
            .contains("more than the 4194304 one schema may carry")
    );
    errors.clear();
    let mut tools = 0;
    while errors.is_empty() {
        tools += 1;
        assert!(
            tools <= MAX_TOTAL_BYTES / MAX_REACHED_BYTES + 1,
            "never bounded"
        );
        let _ = shared.resolve(&format!("t{tools}"), &uses("Big"), &mut errors);
    }
    assert_eq!(tools, MAX_TOTAL_BYTES / shared.entries["Big"].bytes + 1);
    assert!(errors[0].message.contains("add up to more than"));
}
