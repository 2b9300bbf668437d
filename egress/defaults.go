package egress

import "slices"

// DefaultAllow returns what a developer needs to build software: the
// package registries and source hosts of the common toolchains (a new
// slice each time). dsh-bash allows them unless told not to; an embedder
// chooses. Every entry is a name (or *.name) on the public internet: none
// allows a local address.
func DefaultAllow() []string { return slices.Clone(defaultAllow) }

var defaultAllow = []string{
	// Go: modules, checksums, toolchains.
	"proxy.golang.org", "sum.golang.org", "index.golang.org", "golang.org", "go.dev", "dl.google.com",
	// JavaScript: npm, Yarn, JSR, Node's headers for native modules.
	"registry.npmjs.org", "registry.yarnpkg.com", "repo.yarnpkg.com", "jsr.io", "nodejs.org",
	// Python: PyPI and its files.
	"pypi.org", "files.pythonhosted.org",
	// Rust: crates and toolchains.
	"crates.io", "index.crates.io", "static.crates.io", "static.rust-lang.org",
	// Java and Kotlin: Maven Central, Gradle.
	"repo.maven.apache.org", "repo1.maven.org", "plugins.gradle.org", "services.gradle.org",
	// Ruby, PHP, .NET, Elixir.
	"rubygems.org", "index.rubygems.org", "repo.packagist.org", "api.nuget.org", "repo.hex.pm",
	// Source hosts: GitHub (its API, archives, releases and raw files), GitLab, Bitbucket.
	"github.com", "*.github.com", "*.githubusercontent.com", "gitlab.com", "bitbucket.org",
}
