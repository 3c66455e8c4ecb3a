package discovery

import (
	"encoding/json"
	"reflect"
	"strings"

	"k8s.io/kube-openapi/pkg/validation/spec"
)

// openAPISchemas derives OpenAPI schemas from Go API types, as kube-apiserver's generated
// definitions describe them: one definition per struct type, named like
// "io.k8s.api.core.v1.ConfigMap", with the types' documentation. It leaves out the patch
// strategies, so kubectl keeps building strategic merge patches from its compiled-in types.
type openAPISchemas map[string]*spec.Schema

// openAPISchemaTyper is implemented by the API types that say how OpenAPI describes them
// (metav1.Time, resource.Quantity, intstr.IntOrString...).
type openAPISchemaTyper interface {
	OpenAPISchemaType() []string
	OpenAPISchemaFormat() string
}

var (
	schemaTyperType   = reflect.TypeFor[openAPISchemaTyper]()
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
)

// addKind adds t's definition and those it refers to, marked as the schema of gvk.
func (defs openAPISchemas) addKind(t reflect.Type, group, version, kind string) {
	defs.schemaOf(t)
	defs[definitionName(t)].AddExtension("x-kubernetes-group-version-kind",
		[]map[string]string{{"group": group, "version": version, "kind": kind}})
}

// schemaOf is the schema of a value of type t: a reference for a struct type.
func (defs openAPISchemas) schemaOf(t reflect.Type) spec.Schema {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(schemaTyperType) {
		typer := reflect.Zero(t).Interface().(openAPISchemaTyper)
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: typer.OpenAPISchemaType(), Format: typer.OpenAPISchemaFormat()}}
	}
	switch {
	case t.Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(jsonMarshalerType):
		return *spec.MapProperty(nil) // encodes itself, as an object (FieldsV1)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"string"}, Format: "byte"}}
	case t.Kind() == reflect.Slice:
		return *spec.ArrayProperty(ptrTo(defs.schemaOf(t.Elem())))
	case t.Kind() == reflect.Map:
		return *spec.MapProperty(ptrTo(defs.schemaOf(t.Elem())))
	case t.Kind() == reflect.Struct:
		name := definitionName(t)
		if _, done := defs[name]; !done {
			defs[name] = &spec.Schema{} // first, so that recursive types end
			*defs[name] = defs.structSchema(t)
		}
		return *spec.RefSchema("#/components/schemas/" + name)
	}
	return scalarSchema(t.Kind())
}

func ptrTo(s spec.Schema) *spec.Schema { return &s }

func scalarSchema(kind reflect.Kind) spec.Schema {
	switch kind {
	case reflect.Bool:
		return *spec.BooleanProperty()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		return *spec.Int32Property()
	case reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return *spec.Int64Property()
	case reflect.Float32, reflect.Float64:
		return *spec.Float64Property()
	}
	return *spec.StringProperty()
}

// structSchema is an object with t's JSON fields (inline ones merged), described by t's
// SwaggerDoc when it has one.
func (defs openAPISchemas) structSchema(t reflect.Type) spec.Schema {
	docs := swaggerDocs(t)
	s := spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}, Description: docs[""]}}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case !f.IsExported() || name == "-":
			continue
		case name == "" && strings.Contains(opts, "inline"), name == "" && f.Anonymous:
			for prop, schema := range defs.structSchema(f.Type).Properties {
				s.SetProperty(prop, schema)
			}
			continue
		}
		prop := defs.schemaOf(f.Type)
		if prop.Ref.String() != "" {
			// A reference cannot carry a description next to it: wrap it.
			prop = spec.Schema{SchemaProps: spec.SchemaProps{AllOf: []spec.Schema{prop}}}
		}
		prop.Description = docs[name]
		s.SetProperty(name, prop)
	}
	return s
}

// swaggerDocs is the field documentation API types carry (key "" describes the type).
func swaggerDocs(t reflect.Type) map[string]string {
	if documented, ok := reflect.Zero(t).Interface().(interface{ SwaggerDoc() map[string]string }); ok {
		return documented.SwaggerDoc()
	}
	return nil
}

// definitionName names t's definition as kube-apiserver does: its package path with the
// domain reversed ("k8s.io/api/core/v1" gives "io.k8s.api.core.v1"), then its name.
func definitionName(t reflect.Type) string {
	domain, rest, _ := strings.Cut(t.PkgPath(), "/")
	labels := strings.Split(domain, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	return strings.Join(labels, ".") + "." + strings.ReplaceAll(rest, "/", ".") + "." + t.Name()
}
