// Command hello prints hello: the program proctest's TestBuild builds.
package main

import "fmt"

func main() { fmt.Println("hello") }
