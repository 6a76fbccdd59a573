//! The codecs of apiextensions' special types (compiled with `group-apiextensions`): `JSON`,
//! the boxed `JSONSchemaProps.not`, and the `JSONSchemaPropsOr*` enums, which Go marshals by
//! hand (`marshal.go`) and k8s-openapi holds as enums.

#[cfg(feature = "encode")]
use bytes::BufMut;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool, JSONSchemaPropsOrStringArray,
    JSON,
};
use prost::encoding::WireType;

use crate::field::{self, Value};
use crate::wire::{self, At, Ctx, DecodeError};

use super::read_raw_json;
#[cfg(feature = "encode")]
use super::{put_raw_json, raw_json_len};

raw_json_value!(
    JSON,
    "raw",
    "apiextensions `JSON` `{ bytes raw = 1; }`: a JSON value; empty is `None`."
);

/// `JSONSchemaProps.not` is the one boxed message field.
impl Value for Box<JSONSchemaProps> {
    const WIRE: WireType = WireType::LengthDelimited;
    fn read(wt: WireType, buf: &mut &[u8], ctx: Ctx) -> Result<Option<Self>, DecodeError> {
        Ok(JSONSchemaProps::read(wt, buf, ctx)?.map(Box::new))
    }
    #[cfg(feature = "encode")]
    fn value_len(&self) -> usize {
        (**self).value_len()
    }
    #[cfg(feature = "encode")]
    fn put_value(&self, buf: &mut impl BufMut) {
        (**self).put_value(buf);
    }
    #[cfg(feature = "encode")]
    fn zero_len() -> usize {
        <JSONSchemaProps as Value>::zero_len()
    }
    #[cfg(feature = "encode")]
    fn put_zero(buf: &mut impl BufMut) {
        <JSONSchemaProps as Value>::put_zero(buf);
    }
    fn fit(&mut self) {
        Value::fit(&mut **self);
    }
}

#[cfg(feature = "encode")]
/// Encodes a message built from `len` and `put` as a delimited value.
fn nested_len(len: usize) -> usize {
    wire::varint_len(len as u64) + len
}

/// `JSONSchemaPropsOrArray` `{ JSONSchemaProps schema = 1; repeated JSONSchemaProps jSONSchemas = 2; }`:
/// Go's JSON is the array when it is not empty, else the schema; neither is `None`.
impl Value for JSONSchemaPropsOrArray {
    const WIRE: WireType = WireType::LengthDelimited;
    fn read(wt: WireType, buf: &mut &[u8], ctx: Ctx) -> Result<Option<Self>, DecodeError> {
        let (mut msg, ctx) = wire::nested(wt, buf, ctx)?;
        let (mut schema, mut schemas): (Option<JSONSchemaProps>, Vec<JSONSchemaProps>) =
            (None, Vec::new());
        while !msg.is_empty() {
            let (tag, wt) = wire::key(&mut msg)?;
            match tag {
                1 => field::opt(&mut schema, wt, &mut msg, ctx).at("schema")?,
                2 => field::rep(&mut schemas, tag, wt, &mut msg, ctx).at("jSONSchemas")?,
                _ => wire::skip(tag, wt, &mut msg)?,
            }
        }
        Ok(if !schemas.is_empty() {
            Some(JSONSchemaPropsOrArray::Schemas(schemas))
        } else {
            schema.map(|s| JSONSchemaPropsOrArray::Schema(Box::new(s)))
        })
    }
    #[cfg(feature = "encode")]
    fn value_len(&self) -> usize {
        nested_len(match self {
            JSONSchemaPropsOrArray::Schema(s) => field::len_req(1, &**s),
            JSONSchemaPropsOrArray::Schemas(v) => field::len_rep(2, v),
        })
    }
    #[cfg(feature = "encode")]
    fn put_value(&self, buf: &mut impl BufMut) {
        match self {
            JSONSchemaPropsOrArray::Schema(s) => {
                wire::put_header_len(field::len_req(1, &**s), buf);
                field::put_req(1, &**s, buf);
            }
            JSONSchemaPropsOrArray::Schemas(v) => {
                wire::put_header_len(field::len_rep(2, v), buf);
                field::put_rep(2, v, buf);
            }
        }
    }
    #[cfg(feature = "encode")]
    fn zero_len() -> usize {
        1
    }
    #[cfg(feature = "encode")]
    fn put_zero(buf: &mut impl BufMut) {
        buf.put_u8(0);
    }
}

/// `JSONSchemaPropsOrBool` `{ bool allows = 1; JSONSchemaProps schema = 2; }`: a schema when
/// one is present (reading a schema sets `Allows` in Go), else the bool.
impl Value for JSONSchemaPropsOrBool {
    const WIRE: WireType = WireType::LengthDelimited;
    fn read(wt: WireType, buf: &mut &[u8], ctx: Ctx) -> Result<Option<Self>, DecodeError> {
        let (mut msg, ctx) = wire::nested(wt, buf, ctx)?;
        let (mut allows, mut schema) = (false, None::<JSONSchemaProps>);
        while !msg.is_empty() {
            let (tag, wt) = wire::key(&mut msg)?;
            match tag {
                1 => field::req(&mut allows, wt, &mut msg, ctx).at("allows")?,
                2 => field::opt(&mut schema, wt, &mut msg, ctx).at("schema")?,
                _ => wire::skip(tag, wt, &mut msg)?,
            }
        }
        Ok(Some(match schema {
            Some(s) => JSONSchemaPropsOrBool::Schema(Box::new(s)),
            None => JSONSchemaPropsOrBool::Bool(allows),
        }))
    }
    #[cfg(feature = "encode")]
    fn value_len(&self) -> usize {
        nested_len(match self {
            JSONSchemaPropsOrBool::Schema(s) => field::len_req(1, &true) + field::len_req(2, &**s),
            JSONSchemaPropsOrBool::Bool(b) => field::len_req(1, b),
        })
    }
    #[cfg(feature = "encode")]
    fn put_value(&self, buf: &mut impl BufMut) {
        match self {
            JSONSchemaPropsOrBool::Schema(s) => {
                wire::put_header_len(field::len_req(1, &true) + field::len_req(2, &**s), buf);
                field::put_req(1, &true, buf);
                field::put_req(2, &**s, buf);
            }
            JSONSchemaPropsOrBool::Bool(b) => {
                wire::put_header_len(field::len_req(1, b), buf);
                field::put_req(1, b, buf);
            }
        }
    }
    #[cfg(feature = "encode")]
    fn zero_len() -> usize {
        nested_len(field::len_req(1, &false))
    }
    #[cfg(feature = "encode")]
    fn put_zero(buf: &mut impl BufMut) {
        JSONSchemaPropsOrBool::Bool(false).put_value(buf);
    }
}

/// `JSONSchemaPropsOrStringArray` `{ JSONSchemaProps schema = 1; repeated string property = 2; }`:
/// the strings when there are any, else the schema, else no strings.
impl Value for JSONSchemaPropsOrStringArray {
    const WIRE: WireType = WireType::LengthDelimited;
    fn read(wt: WireType, buf: &mut &[u8], ctx: Ctx) -> Result<Option<Self>, DecodeError> {
        let (mut msg, ctx) = wire::nested(wt, buf, ctx)?;
        let (mut schema, mut strings) = (None::<JSONSchemaProps>, Vec::<String>::new());
        while !msg.is_empty() {
            let (tag, wt) = wire::key(&mut msg)?;
            match tag {
                1 => field::opt(&mut schema, wt, &mut msg, ctx).at("schema")?,
                2 => field::rep(&mut strings, tag, wt, &mut msg, ctx).at("property")?,
                _ => wire::skip(tag, wt, &mut msg)?,
            }
        }
        Ok(Some(match schema {
            Some(s) if strings.is_empty() => JSONSchemaPropsOrStringArray::Schema(Box::new(s)),
            _ => JSONSchemaPropsOrStringArray::Strings(strings),
        }))
    }
    #[cfg(feature = "encode")]
    fn value_len(&self) -> usize {
        nested_len(match self {
            JSONSchemaPropsOrStringArray::Schema(s) => field::len_req(1, &**s),
            JSONSchemaPropsOrStringArray::Strings(v) => field::len_rep(2, v),
        })
    }
    #[cfg(feature = "encode")]
    fn put_value(&self, buf: &mut impl BufMut) {
        match self {
            JSONSchemaPropsOrStringArray::Schema(s) => {
                wire::put_header_len(field::len_req(1, &**s), buf);
                field::put_req(1, &**s, buf);
            }
            JSONSchemaPropsOrStringArray::Strings(v) => {
                wire::put_header_len(field::len_rep(2, v), buf);
                field::put_rep(2, v, buf);
            }
        }
    }
    #[cfg(feature = "encode")]
    fn zero_len() -> usize {
        1
    }
    #[cfg(feature = "encode")]
    fn put_zero(buf: &mut impl BufMut) {
        buf.put_u8(0);
    }
}
