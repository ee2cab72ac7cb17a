// Package artifact frames what a backup stores: a stream compressed with zstd and then
// encrypted with age (https://age-encryption.org/v1), either, both or neither. Writers say
// which; readers detect it from the first bytes (an age header, zstd's magic number, or
// anything else, which passes through as a plain etcd database), so artifacts written before
// encryption existed still restore. Compression comes first because encrypted bytes do not
// compress.
//
// Keys are age's: identities (AGE-SECRET-KEY-1…, AGE-SECRET-KEY-PQ-1…) decrypt, recipients
// (age1…, age1pq1…) encrypt. A Keyring holds several identities so keys can be rotated: any
// of them may decrypt an artifact, newest listed first. Everything streams: memory stays a
// few buffers whatever the artifact's size.
package artifact
