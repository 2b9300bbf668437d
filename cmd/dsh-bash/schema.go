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

// isHelp reports whether arg asks for help, as the flag package reads it.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "--h", "-help", "--help":
		return true
	}
	return false
}

// schemaCmd prints the five tool definitions as JSON.
func schemaCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Fprintln(stdout, "usage of dsh-bash schema: dsh-bash schema prints the tool definitions as JSON; it takes no flags")
		return 0
	}
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
