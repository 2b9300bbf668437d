// Package execbypass reads the table of commands that once got past the
// static permission check and run a denied program
// (permission/testdata/execbypass/*.txtar): the static check's tests and
// the exec check's replay read it alike.
//
// Each section of a txtar file is one case, named CLASS/SPELLING, of
// lines "KEY: VALUE": deny (a deny rule; one or more), setup (a shell
// line run before; any number), run (the command), ran (a shell test
// that the denied thing happened, where zap's marker cannot say), note;
// or a line "run-lines:" after which the rest of the section is the
// command.
package execbypass

import (
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/tools/txtar"
)

// Case is one command of the table.
type Case struct {
	Name        string // FILE:CLASS/SPELLING with ReadDir, CLASS/SPELLING with Read
	Deny, Setup []string
	Run, Ran    string
}

// Class is the case's class: its name up to the first "/".
func (c Case) Class() string {
	class, _, _ := strings.Cut(c.Name, "/")
	return class
}

// Read reads the cases of one file.
func Read(path string) ([]Case, error) {
	ar, err := txtar.ParseFile(path)
	if err != nil {
		return nil, err
	}
	var cases []Case
	for _, f := range ar.Files {
		c, err := parse(f.Name, string(f.Data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// ReadDir reads the cases of every .txtar file in dir, their names
// prefixed with the file's.
func ReadDir(dir string) ([]Case, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.txtar"))
	var all []Case
	for _, f := range files {
		cases, err := Read(f)
		if err != nil {
			return nil, err
		}
		for _, c := range cases {
			c.Name = filepath.Base(f) + ":" + c.Name
			all = append(all, c)
		}
	}
	return all, nil
}

func parse(name, body string) (Case, error) {
	c := Case{Name: name}
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	for i, line := range lines {
		if line == "run-lines:" {
			c.Run = strings.Join(lines[i+1:], "\n")
			break
		}
		key, value, _ := strings.Cut(line, ": ")
		switch key {
		case "deny":
			c.Deny = append(c.Deny, value)
		case "setup":
			c.Setup = append(c.Setup, value)
		case "run":
			c.Run = value
		case "ran":
			c.Ran = value
		case "note", "":
		default:
			return c, fmt.Errorf("%s: unknown line %q", name, line)
		}
	}
	if c.Run == "" || len(c.Deny) == 0 {
		return c, fmt.Errorf("%s: no run or no deny line", name)
	}
	return c, nil
}
