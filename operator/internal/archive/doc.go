// Package archive is continuous archiving's pure core: segment names, the segment format, and
// the chain decider (recoverable ranges, gaps, restore plans, retention). See the design below,
// completed as the archiver and restore land.
package archive
