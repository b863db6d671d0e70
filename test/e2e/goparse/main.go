// goparse: read profiles with Go's github.com/google/pprof/profile parser, as
// packaged by Debian (golang-github-google-pprof-dev), which is what Parca and
// Pyroscope parse with.  For each file: parse, validate, and print one line:
//
//	FILE types=samples/count,cpu/nanoseconds default=cpu period=cpu/nanoseconds:10000000 samples=N
//	  totals=A,B functions=F names=a;b;c...
//
// (names: every function name, for the caller to grep).  Exit 1 if any file
// does not parse or is not valid.
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

func main() {
	bad := 0
	for _, path := range os.Args[1:] {
		f, err := os.Open(path)
		if err != nil {
			fmt.Printf("%s FAIL open: %v\n", path, err)
			bad++
			continue
		}
		p, err := profile.Parse(f)
		f.Close()
		if err == nil {
			err = p.CheckValid()
		}
		if err != nil {
			fmt.Printf("%s FAIL parse: %v\n", path, err)
			bad++
			continue
		}
		var types []string
		totals := make([]int64, len(p.SampleType))
		for _, t := range p.SampleType {
			types = append(types, t.Type+"/"+t.Unit)
		}
		for _, s := range p.Sample {
			for i, v := range s.Value {
				totals[i] += v
			}
		}
		var tot []string
		for _, v := range totals {
			tot = append(tot, fmt.Sprint(v))
		}
		period := ""
		if p.PeriodType != nil {
			period = fmt.Sprintf("%s/%s:%d", p.PeriodType.Type, p.PeriodType.Unit, p.Period)
		}
		var names []string
		for _, fn := range p.Function {
			names = append(names, fn.Name)
		}
		sort.Strings(names)
		fmt.Printf("%s types=%s default=%s period=%s samples=%d totals=%s functions=%d names=%s\n",
			path, strings.Join(types, ","), p.DefaultSampleType, period, len(p.Sample),
			strings.Join(tot, ","), len(p.Function), strings.Join(names, ";"))
	}
	if bad > 0 {
		os.Exit(1)
	}
}
