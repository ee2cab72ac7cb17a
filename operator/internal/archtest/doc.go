// Package archtest keeps docs/architecture.md's import diagram true: its test reads the diagram
// and the imports of every package of operator/ and tenants/, and fails when a package is missing
// from the diagram or imports from its own line or below. It holds no code of its own.
package archtest
