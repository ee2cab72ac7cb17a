package kubectletcd

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// Output formats (-o).
const (
	OutputTable = "table"
	OutputJSON  = "json"
	OutputYAML  = "yaml"
)

// Formats are the accepted values of -o.
var Formats = []string{OutputTable, OutputJSON, OutputYAML}

// CheckFormat refuses an unknown -o before anything is done.
func CheckFormat(format string) error {
	if !slices.Contains(Formats, format) {
		return Errorf(ExitUsage, "unknown output format %q: use one of %v", format, Formats)
	}
	return nil
}

// Print writes v as JSON or YAML, or calls table with a tab-aligned writer.
func Print(out io.Writer, format string, v any, table func(w io.Writer)) error {
	switch format {
	case OutputJSON:
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", data)
		return err
	case OutputYAML:
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = out.Write(data)
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	table(w)
	return w.Flush()
}
