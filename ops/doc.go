// Package ops holds the framework's Gorgonia operations.
package ops
