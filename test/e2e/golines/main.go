// golines: the locations of pprof profiles, as Go's github.com/google/pprof/profile
// parser (Debian's golang-github-google-pprof-dev) reads them, for e2e_names to
// compare with llvm-symbolizer.  One line per location with a mapping:
//
//	L <tab> mapping file <tab> start <tab> limit <tab> offset <tab> address (hex)
//
// then one line per Line, innermost first:
//
//	F <tab> name <tab> system_name <tab> filename <tab> line
//
// and one "M" line per mapping with its has_* flags.  Exit 1 if a file does
// not parse.
package main

import (
	"fmt"
	"os"

	"github.com/google/pprof/profile"
)

func main() {
	for _, path := range os.Args[1:] {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		p, err := profile.Parse(f)
		f.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, path, err)
			os.Exit(1)
		}
		for _, m := range p.Mapping {
			fmt.Printf("M\t%s\t%v\t%v\t%v\t%v\n", m.File, m.HasFunctions, m.HasFilenames,
				m.HasLineNumbers, m.HasInlineFrames)
		}
		for _, l := range p.Location {
			if l.Mapping == nil {
				continue
			}
			fmt.Printf("L\t%s\t%x\t%x\t%x\t%x\n", l.Mapping.File, l.Mapping.Start,
				l.Mapping.Limit, l.Mapping.Offset, l.Address)
			for _, ln := range l.Line {
				if ln.Function == nil {
					continue
				}
				fmt.Printf("F\t%s\t%s\t%s\t%d\n", ln.Function.Name, ln.Function.SystemName,
					ln.Function.Filename, ln.Line)
			}
		}
	}
}
