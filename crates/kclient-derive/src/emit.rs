//! The code `#[derive(CustomResource)]` generates: the root type and its impls.

use proc_macro2::{Span, TokenStream};
use proc_macro_crate::{crate_name, FoundCrate};
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Error, Ident, LitStr, Path, Result};

use crate::attrs::{self, Attrs, SchemaMode};
use crate::names;

/// Where the generated code finds kclient-core (and kclient-typed, when the crate has it).
struct Paths {
    core: TokenStream,
    typed: Option<TokenStream>,
}

fn found(name: &str) -> Option<TokenStream> {
    match crate_name(name).ok()? {
        FoundCrate::Itself => {
            let ident = Ident::new(&name.replace('-', "_"), Span::call_site());
            Some(quote!(::#ident))
        }
        FoundCrate::Name(n) => {
            let ident = Ident::new(&n, Span::call_site());
            Some(quote!(::#ident))
        }
    }
}

fn paths(attrs: &Attrs, span: Span) -> Result<Paths> {
    let path = |p: &Path| quote!(#p);
    if let Some(core) = &attrs.core_path {
        return Ok(Paths {
            core: path(core),
            typed: attrs.typed_path.as_ref().map(path),
        });
    }
    if let Some(facade) = found("kclient") {
        return Ok(Paths {
            core: quote!(#facade::core),
            typed: Some(
                attrs
                    .typed_path
                    .as_ref()
                    .map_or(quote!(#facade::typed), path),
            ),
        });
    }
    if let Some(core) = found("kclient-core") {
        return Ok(Paths {
            core,
            typed: attrs
                .typed_path
                .as_ref()
                .map(path)
                .or_else(|| found("kclient-typed")),
        });
    }
    Err(Error::new(
        span,
        "#[derive(CustomResource)] needs kclient (with its `derive` feature) or kclient-core (with its `schema` feature) among the crate's dependencies",
    ))
}

/// Everything the derive generates for `input`.
pub(crate) fn custom_resource(input: DeriveInput) -> Result<TokenStream> {
    let spec = &input.ident;
    if !matches!(input.data, Data::Struct(_)) {
        return Err(Error::new_spanned(
            &input.ident,
            "#[derive(CustomResource)] goes on the struct of the resource's spec (e.g. `struct MemcachedSpec { size: i32 }`), not on an enum or a union",
        ));
    }
    if !input.generics.params.is_empty() {
        return Err(Error::new_spanned(
            &input.generics,
            "#[derive(CustomResource)] does not take generic parameters: a kind has one schema",
        ));
    }
    let attrs = attrs::parse(&input.attrs)?;
    let call_site = Span::call_site();
    let required = |value: &Option<LitStr>, name: &str, example: &str| {
        value.clone().ok_or_else(|| {
            Error::new_spanned(
                spec,
                format!("#[derive(CustomResource)] needs #[kube({name} = \"...\")] on the struct, e.g. #[kube({name} = \"{example}\")]"),
            )
        })
    };
    let group_lit = required(&attrs.group, "group", "cache.example.com")?;
    let version_lit = required(&attrs.version, "version", "v1")?;
    let check = |lit: &LitStr, problem: Option<String>| match problem {
        Some(p) => Err(Error::new(lit.span(), p)),
        None => Ok(()),
    };
    let group = group_lit.value();
    check(&group_lit, names::group_problem(&group))?;
    let version = version_lit.value();
    check(&version_lit, names::version_problem(&version))?;
    let kind = match &attrs.kind {
        Some(k) => {
            check(k, names::kind_problem(&k.value()))?;
            k.value()
        }
        None => {
            let name = spec.to_string();
            match name.strip_suffix("Spec") {
                Some(kind) if !kind.is_empty() => {
                    if let Some(p) = names::kind_problem(kind) {
                        return Err(Error::new_spanned(spec, p));
                    }
                    kind.to_owned()
                }
                _ => {
                    return Err(Error::new_spanned(
                        spec,
                        format!("#[derive(CustomResource)] names the kind after the struct without its `Spec` suffix: name the struct `{name}Spec`, or give the kind with #[kube(kind = \"...\")]"),
                    ))
                }
            }
        }
    };
    let singular = match &attrs.singular {
        Some(s) => {
            check(s, names::resource_name_problem("singular", &s.value()))?;
            s.value()
        }
        None => kind.to_lowercase(),
    };
    let plural = match &attrs.plural {
        Some(p) => {
            check(p, names::resource_name_problem("plural", &p.value()))?;
            p.value()
        }
        None => names::plural(&kind.to_lowercase()),
    };
    let root_name = match &attrs.root {
        Some(r) => r.value(),
        None => kind.clone(),
    };
    if *spec == root_name {
        return Err(Error::new_spanned(
            spec,
            format!("#[derive(CustomResource)] generates the type `{root_name}` itself: the spec struct needs another name (`{root_name}Spec`)"),
        ));
    }
    let root = syn::parse_str::<Ident>(&root_name)
        .map_err(|_| Error::new(call_site, format!("`{root_name}` is not a type name")))?;
    let paths = paths(&attrs, call_site)?;
    let core = &paths.core;
    let private = quote!(#core::__private);
    let k8s = quote!(#private::k8s_openapi);
    let serde_path = LitStr::new(&format!("{private}::serde").replace(' ', ""), call_site);
    let vis = &input.vis;
    let meta_ty = quote!(#k8s::apimachinery::pkg::apis::meta::v1::ObjectMeta);
    let api_version = format!("{group}/{version}");
    let list_kind = format!("{kind}List");
    let crd_name = format!("{plural}.{group}");
    let scope = if attrs.namespaced {
        quote!(#k8s::NamespaceResourceScope)
    } else {
        quote!(#k8s::ClusterResourceScope)
    };

    // The root type.
    let derives = &attrs.derives;
    let extra_attrs = &attrs.extra_attrs;
    let doc = attrs.doc.clone().unwrap_or_else(|| {
        format!(" `{kind}` (`{api_version}`): a custom resource with the spec [`{spec}`], generated by `#[derive(CustomResource)]`.")
    });
    let (status_field, status_init, status_wire, status_ser, status_len) = match &attrs.status {
        Some(status) => (
            quote! {
                /// The observed state (`None` until a controller writes it).
                #vis status: ::core::option::Option<#status>,
            },
            quote!(status: ::core::option::Option::None,),
            quote! {
                #[serde(default)]
                status: ::core::option::Option<#status>,
            },
            quote! {
                match &self.status {
                    ::core::option::Option::Some(status) => #private::serde::ser::SerializeStruct::serialize_field(&mut state, "status", status)?,
                    ::core::option::Option::None => #private::serde::ser::SerializeStruct::skip_field(&mut state, "status")?,
                }
            },
            quote!(+ usize::from(self.status.is_some())),
        ),
        None => (quote!(), quote!(), quote!(), quote!(), quote!()),
    };
    let status_move = if attrs.status.is_some() {
        quote!(status: wire.status,)
    } else {
        quote!()
    };
    let new_doc = format!(" A `{kind}` named `name` with `spec` (and no status).");

    // The CRD.
    let short_names: Vec<String> = attrs.short_names.iter().map(LitStr::value).collect();
    let categories: Vec<String> = attrs.categories.iter().map(LitStr::value).collect();
    let selectable: Vec<String> = attrs.selectable.iter().map(LitStr::value).collect();
    let ext = quote!(#k8s::apiextensions_apiserver::pkg::apis::apiextensions::v1);
    let opt_str = |v: &Option<String>| match v {
        Some(s) => quote!(::core::option::Option::Some(#s.to_owned())),
        None => quote!(::core::option::Option::None),
    };
    let columns = attrs.printer_columns.iter().map(|c| {
        let (name, type_, json_path) = (&c.name, &c.type_, &c.json_path);
        let description = opt_str(&c.description);
        let format = opt_str(&c.format);
        let priority = match c.priority {
            Some(p) => quote!(::core::option::Option::Some(#p)),
            None => quote!(::core::option::Option::None),
        };
        quote! {
            #ext::CustomResourceColumnDefinition {
                name: #name.to_owned(),
                type_: #type_.to_owned(),
                json_path: #json_path.to_owned(),
                description: #description,
                format: #format,
                priority: #priority,
            }
        }
    });
    let scale = match &attrs.scale {
        Some(s) => {
            let (spec_path, status_path) = (&s.spec_replicas_path, &s.status_replicas_path);
            let selector = opt_str(&s.label_selector_path);
            quote!(::core::option::Option::Some(#ext::CustomResourceSubresourceScale {
                spec_replicas_path: #spec_path.to_owned(),
                status_replicas_path: #status_path.to_owned(),
                label_selector_path: #selector,
            }))
        }
        None => quote!(::core::option::Option::None),
    };
    let validations = attrs.validations.iter().map(|r| {
        let rule = &r.rule;
        let message = opt_str(&r.message);
        let message_expression = opt_str(&r.message_expression);
        let reason = opt_str(&r.reason);
        let field_path = opt_str(&r.field_path);
        let optional_old_self = match r.optional_old_self {
            Some(b) => quote!(::core::option::Option::Some(#b)),
            None => quote!(::core::option::Option::None),
        };
        quote! {
            #ext::ValidationRule {
                rule: #rule.to_owned(),
                message: #message,
                message_expression: #message_expression,
                reason: #reason,
                field_path: #field_path,
                optional_old_self: #optional_old_self,
            }
        }
    });
    let annotations = attrs
        .annotations
        .iter()
        .map(|(k, v)| quote!((#k.to_owned(), #v.to_owned())));
    let labels = attrs
        .labels
        .iter()
        .map(|(k, v)| quote!((#k.to_owned(), #v.to_owned())));
    let description = opt_str(&attrs.doc.as_ref().map(|d| d.trim().to_owned()));
    let (namespaced, served, storage, deprecated, status_subresource) = (
        attrs.namespaced,
        attrs.served,
        attrs.storage,
        attrs.deprecated,
        attrs.status.is_some(),
    );
    let deprecation_warning = opt_str(&attrs.deprecation_warning);
    let definition = quote! {
        #core::crd::Definition {
            group: #group.to_owned(),
            version: #version.to_owned(),
            kind: #kind.to_owned(),
            plural: #plural.to_owned(),
            singular: #singular.to_owned(),
            namespaced: #namespaced,
            short_names: ::std::vec![#(#short_names.to_owned()),*],
            categories: ::std::vec![#(#categories.to_owned()),*],
            printer_columns: ::std::vec![#(#columns),*],
            selectable_fields: ::std::vec![#(#selectable.to_owned()),*],
            served: #served,
            storage: #storage,
            deprecated: #deprecated,
            deprecation_warning: #deprecation_warning,
            status_subresource: #status_subresource,
            scale: #scale,
            validations: ::std::vec![#(#validations),*],
            annotations: ::std::collections::BTreeMap::from([#(#annotations),*]),
            labels: ::std::collections::BTreeMap::from([#(#labels),*]),
            description: #description,
        }
    };
    let status_schema = match &attrs.status {
        Some(status) => quote!(::core::option::Option::Some(#core::crd::schema_for::<#status>())),
        None => quote!(::core::option::Option::None),
    };
    let to_crd = match attrs.schema {
        SchemaMode::Derived => quote!(definition.to_crd(
            ::core::option::Option::Some(#core::crd::schema_for::<#spec>()),
            #status_schema,
        )),
        SchemaMode::Manual => {
            quote!(definition.to_crd_with_schema(#core::crd::schema_for::<#root>()))
        }
        SchemaMode::Disabled => {
            quote!(definition.to_crd(::core::option::Option::None, ::core::option::Option::None))
        }
    };

    let has_status = match (&attrs.status, &paths.typed) {
        (Some(_), Some(typed)) => quote!(impl #typed::HasStatus for #root {}),
        _ => quote!(),
    };
    let has_scale = match (&attrs.scale, &paths.typed) {
        (Some(_), Some(typed)) => quote!(impl #typed::HasScale for #root {}),
        _ => quote!(),
    };
    let wire = format_ident!("__{}Wire", root);
    let field_count = quote!(4usize #status_len);

    Ok(quote! {
        #[doc = #doc]
        #[derive(::core::clone::Clone, ::core::fmt::Debug #(, #derives)*)]
        #(#[#extra_attrs])*
        #vis struct #root {
            /// Standard object metadata (name, namespace, labels, owner references …).
            #vis metadata: #meta_ty,
            /// The desired state.
            #vis spec: #spec,
            #status_field
        }

        impl #root {
            #[doc = #new_doc]
            #vis fn new(name: &str, spec: #spec) -> Self {
                Self {
                    metadata: #meta_ty {
                        name: ::core::option::Option::Some(name.to_owned()),
                        ..::core::default::Default::default()
                    },
                    spec,
                    #status_init
                }
            }
        }

        impl #k8s::Resource for #root {
            const API_VERSION: &'static str = #api_version;
            const GROUP: &'static str = #group;
            const KIND: &'static str = #kind;
            const VERSION: &'static str = #version;
            const URL_PATH_SEGMENT: &'static str = #plural;
            type Scope = #scope;
        }

        impl #k8s::ListableResource for #root {
            const LIST_KIND: &'static str = #list_kind;
        }

        impl #k8s::Metadata for #root {
            type Ty = #meta_ty;

            fn metadata(&self) -> &Self::Ty {
                &self.metadata
            }

            fn metadata_mut(&mut self) -> &mut Self::Ty {
                &mut self.metadata
            }
        }

        impl #core::crd::CustomResourceExt for #root {
            fn crd() -> #ext::CustomResourceDefinition {
                let definition = #definition;
                #to_crd
            }

            fn crd_name() -> &'static str {
                #crd_name
            }

            fn shortnames() -> &'static [&'static str] {
                &[#(#short_names),*]
            }
        }

        // `apiVersion` and `kind` are written from the type and not kept: they are the
        // type's, whatever an object read says.
        impl #private::serde::Serialize for #root {
            fn serialize<S: #private::serde::Serializer>(&self, serializer: S) -> ::core::result::Result<S::Ok, S::Error> {
                let mut state = #private::serde::Serializer::serialize_struct(serializer, #kind, #field_count)?;
                #private::serde::ser::SerializeStruct::serialize_field(&mut state, "apiVersion", #api_version)?;
                #private::serde::ser::SerializeStruct::serialize_field(&mut state, "kind", #kind)?;
                #private::serde::ser::SerializeStruct::serialize_field(&mut state, "metadata", &self.metadata)?;
                #private::serde::ser::SerializeStruct::serialize_field(&mut state, "spec", &self.spec)?;
                #status_ser
                #private::serde::ser::SerializeStruct::end(state)
            }
        }

        impl<'de> #private::serde::Deserialize<'de> for #root {
            fn deserialize<D: #private::serde::Deserializer<'de>>(deserializer: D) -> ::core::result::Result<Self, D::Error> {
                #[derive(#private::serde::Deserialize)]
                #[serde(crate = #serde_path)]
                struct #wire {
                    #[serde(default)]
                    metadata: #meta_ty,
                    spec: #spec,
                    #status_wire
                }
                let wire = <#wire as #private::serde::Deserialize>::deserialize(deserializer)?;
                ::core::result::Result::Ok(Self {
                    metadata: wire.metadata,
                    spec: wire.spec,
                    #status_move
                })
            }
        }

        #has_status
        #has_scale
    })
}
