package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/dshgo/dsh/toolbash"
	"github.com/dshgo/dsh/tools"
)

// definition is one tool as a model (or an MCP client) sees it.
type definition struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	InputSchema any               `json:"inputSchema"`
	Annotations tools.Annotations `json:"annotations"`
}

// schemaCmd prints the five tool definitions as JSON.
func schemaCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "dsh-bash schema takes no arguments\n")
		return 2
	}
	var defs []definition
	for _, t := range (&toolbash.Tools{}).List() { // the zero Tools only describes
		defs = append(defs, definition{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Annotations: t.Annotations})
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(defs); err != nil {
		fmt.Fprintf(stderr, "dsh-bash schema: %v\n", err)
		return 1
	}
	return 0
}
