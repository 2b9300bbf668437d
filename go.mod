module github.com/dshgo/dsh

go 1.26.0

require (
	github.com/coder/acp-go-sdk v0.13.0
	github.com/google/jsonschema-go v0.4.3
	github.com/landlock-lsm/go-landlock v0.11.2
	github.com/sourcegraph/jsonrpc2 v0.2.3
	go.uber.org/goleak v1.3.0
	golang.org/x/crypto v0.59.0
	golang.org/x/net v0.63.0
	golang.org/x/sys v0.50.0
	golang.org/x/tools v0.42.0
	mvdan.cc/sh/v3 v3.14.1
)

require kernel.org/pub/linux/libs/security/libcap/psx v1.2.78

require (
	github.com/charmbracelet/x/ansi v0.12.0
	github.com/creack/pty v1.1.24
	github.com/kevinburke/ssh_config v1.6.0
)

require (
	github.com/modelcontextprotocol/go-sdk v1.8.0
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)
