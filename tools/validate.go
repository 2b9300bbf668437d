package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// argSchema validates a tool's arguments property by property, so that an
// error names the argument and says what was expected, in words a model can
// act on: `invalid timeoutMs: expected a positive number, got -5`.
//
// Arguments are read exactly: a key that is not one of the schema's
// properties, spelt exactly (JSON decoding in Go matches keys without
// regard to case, and the last of two equal keys wins), is an error, and
// so is a key given twice. What a client shows its user as the call's
// arguments is then what the tool runs.
type argSchema struct {
	tool     string
	required []string
	props    []argProp
	withheld map[string]string
}

type argProp struct {
	name   string
	schema *jsonschema.Resolved
	want   string // "a positive number"
}

func compileArgs(t *Tool) (*argSchema, error) {
	a := &argSchema{tool: t.Name, withheld: t.Withheld}
	s := t.InputSchema
	if s == nil {
		return a, nil
	}
	if s.Type != "object" {
		return nil, errors.New("the input schema must be of type object")
	}
	if _, err := s.Resolve(nil); err != nil {
		return nil, fmt.Errorf("the input schema does not resolve: %w", err)
	}
	a.required = s.Required
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		sub := s.Properties[name]
		rs, err := sub.Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("the schema of argument %s does not resolve: %w", name, err)
		}
		a.props = append(a.props, argProp{name: name, schema: rs, want: describe(sub)})
	}
	for name := range t.Withheld {
		if a.prop(name) != nil {
			return nil, fmt.Errorf("argument %s is both in the schema and withheld", name)
		}
	}
	return a, nil
}

// prop is the property of that exact name, or nil.
func (a *argSchema) prop(name string) *argProp {
	for i := range a.props {
		if a.props[i].name == name {
			return &a.props[i]
		}
	}
	return nil
}

// validate checks raw against the schema.
func (a *argSchema) validate(raw json.RawMessage) error {
	args, err := objectArgs(raw)
	if err != nil {
		return err
	}
	for _, kv := range args {
		if err := a.known(kv.name); err != nil {
			return err
		}
	}
	for _, name := range a.required {
		if !slices.ContainsFunc(args, func(kv keyValue) bool { return kv.name == name }) {
			return fmt.Errorf("missing required argument %s", name)
		}
	}
	for _, kv := range args {
		p := a.prop(kv.name)
		var inst any
		if err := json.Unmarshal(kv.value, &inst); err != nil || p.schema.Validate(inst) != nil {
			return fmt.Errorf("invalid %s: expected %s, got %s", p.name, p.want, quote(kv.value))
		}
	}
	return nil
}

// known checks that name is one of the schema's properties, spelt
// exactly.
func (a *argSchema) known(name string) error {
	if a.prop(name) != nil {
		return nil
	}
	if text, ok := a.withheld[name]; ok {
		return errors.New(text)
	}
	for _, p := range a.props {
		// EqualFold folds as Go's JSON decoding does: the Kelvin sign as
		// k, the long s as s.
		if strings.EqualFold(p.name, name) {
			return fmt.Errorf("invalid arguments: unknown argument %s (argument names are exact: did you mean %s?)", quoteKey(name), p.name)
		}
	}
	names := make([]string, len(a.props))
	for i, p := range a.props {
		names[i] = p.name
	}
	if len(names) == 0 {
		return fmt.Errorf("invalid arguments: unknown argument %s (%s takes none)", quoteKey(name), a.tool)
	}
	return fmt.Errorf("invalid arguments: unknown argument %s (%s takes %s)", quoteKey(name), a.tool, strings.Join(names, ", "))
}

// keyValue is one member of the arguments object, in the order sent.
type keyValue struct {
	name  string
	value json.RawMessage
}

// objectArgs reads the arguments object member by member, refusing a key
// given twice (JSON decoders disagree on which of the two wins).
func objectArgs(raw json.RawMessage) ([]keyValue, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	notObject := fmt.Errorf("invalid arguments: expected a JSON object, got %s", quote(raw))
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, notObject
	}
	var args []keyValue
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, notObject
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, notObject
		}
		if slices.ContainsFunc(args, func(kv keyValue) bool { return kv.name == name }) {
			return nil, fmt.Errorf("invalid arguments: argument %s is given twice", quoteKey(name))
		}
		args = append(args, keyValue{name, v})
	}
	if _, err := dec.Token(); err != nil || dec.More() {
		return nil, notObject
	}
	if _, err := dec.Token(); err == nil {
		return nil, notObject // something after the object
	}
	return args, nil
}

// quoteKey shows an argument's name as sent, quoted where it is not a
// plain word.
func quoteKey(name string) string {
	for _, r := range name {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return fmt.Sprintf("%+q", name)
		}
	}
	if name == "" {
		return `""`
	}
	return name
}

// quote shows a JSON value as the model sent it, shortened when long.
func quote(v json.RawMessage) string {
	s := string(v)
	if len(s) > 60 {
		s = strings.ToValidUTF8(s[:57], "") + "..."
	}
	return s
}

// describe says in words what a property schema accepts.
func describe(s *jsonschema.Schema) string {
	switch s.Type {
	case "string":
		switch {
		case s.Pattern == `\S`:
			return "a non-blank string"
		case s.MinLength != nil && *s.MinLength > 0:
			return "a non-empty string"
		}
		return "a string"
	case "number", "integer":
		noun := "number"
		if s.Type == "integer" {
			noun = "whole number"
		}
		switch {
		case s.ExclusiveMinimum != nil && *s.ExclusiveMinimum == 0:
			return "a positive " + noun
		case s.Minimum != nil:
			return fmt.Sprintf("a %s of at least %v", noun, *s.Minimum)
		}
		return "a " + noun
	case "boolean":
		return "true or false"
	case "array":
		return "an array"
	case "object":
		return "an object"
	}
	if len(s.Enum) > 0 {
		b, _ := json.Marshal(s.Enum)
		return "one of " + string(b)
	}
	return "a valid value"
}
