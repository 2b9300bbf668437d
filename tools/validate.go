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
type argSchema struct {
	required []string
	props    []argProp
}

type argProp struct {
	name   string
	schema *jsonschema.Resolved
	want   string // "a positive number"
}

func compileArgs(s *jsonschema.Schema) (*argSchema, error) {
	if s == nil {
		return &argSchema{}, nil
	}
	if s.Type != "object" {
		return nil, errors.New("the input schema must be of type object")
	}
	if _, err := s.Resolve(nil); err != nil {
		return nil, fmt.Errorf("the input schema does not resolve: %w", err)
	}
	a := &argSchema{required: s.Required}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		sub := s.Properties[name]
		rs, err := sub.Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("the schema of argument %s does not resolve: %w", name, err)
		}
		a.props = append(a.props, argProp{name: name, schema: rs, want: describe(sub)})
	}
	return a, nil
}

// validate checks raw against the schema. Unknown arguments are ignored.
func (a *argSchema) validate(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	args := map[string]json.RawMessage{}
	if len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if err := json.Unmarshal(raw, &args); err != nil || args == nil {
			return fmt.Errorf("invalid arguments: expected a JSON object, got %s", quote(raw))
		}
	}
	for _, name := range a.required {
		if _, ok := args[name]; !ok {
			return fmt.Errorf("missing required argument %s", name)
		}
	}
	for _, p := range a.props {
		v, ok := args[p.name]
		if !ok {
			continue
		}
		var inst any
		if err := json.Unmarshal(v, &inst); err != nil || p.schema.Validate(inst) != nil {
			return fmt.Errorf("invalid %s: expected %s, got %s", p.name, p.want, quote(v))
		}
	}
	return nil
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
		noun := map[string]string{"number": "number", "integer": "whole number"}[s.Type]
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
