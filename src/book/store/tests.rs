use super::*;

fn stored(weights: bool) -> Stored {
    Stored {
        result: br#"{"format":1,"train":{"losses":[2.5,1.25]}}"#.to_vec(),
        weights: weights.then(|| (0..=255u8).cycle().take(5000).collect()),
    }
}

#[test]
fn a_stored_entry_reads_back_as_written() {
    for w in [false, true] {
        let s = stored(w);
        let bytes = encode(&s);
        assert_eq!(decode(&bytes).unwrap(), s);
        let listed = members(&bytes[..bytes.len().min(160)]).unwrap();
        assert_eq!(listed.len(), 1 + usize::from(w), "{listed:?}");
    }
}

#[test]
fn any_changed_byte_is_refused_before_it_is_read() {
    let bytes = encode(&stored(true));
    let body = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    let body = body + bytes[body..].iter().position(|&b| b == b'\n').unwrap() + 1;
    for at in [body, body + 5, bytes.len() / 2, bytes.len() - 1] {
        let mut bad = bytes.clone();
        bad[at] ^= 1;
        let why = decode(&bad).unwrap_err();
        assert!(why.contains("checksum does not match"), "byte {at}: {why}");
    }
    assert!(decode(b"revtx-stored-run 1\n").is_err());
    assert!(decode(b"something else entirely").is_err());
}

#[test]
fn a_result_edited_with_a_new_checksum_reads_as_edited() {
    // What the audit exists for: the checksum guards against damage, not against an edit
    // that recomputes it.
    let mut s = stored(false);
    s.result = br#"{"format":1,"train":{"losses":[2.5,1.5]}}"#.to_vec();
    assert_eq!(decode(&encode(&s)).unwrap(), s);
}

#[test]
fn the_store_keeps_only_keys_and_unpacks_into_a_cache() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("results"));
    assert!(store.keys().is_empty(), "no folder yet: nothing stored");
    let key = "0123456789abcdef01234567";
    store.write(key, &stored(true)).unwrap();
    std::fs::write(store.dir.join("notes.run"), "not a key").unwrap();
    std::fs::write(store.dir.join("README"), "mine").unwrap();
    assert_eq!(store.keys().into_iter().collect::<Vec<_>>(), vec![key]);
    assert_eq!(store.has_weights(key), Some(true));
    let runs = dir.path().join("cache/runs");
    let entry = store.unpack(key, &runs).unwrap();
    assert!(revtx_spec::entry::verifies(&entry));
    assert_eq!(
        std::fs::read(entry.join(RESULT_FILE)).unwrap(),
        stored(true).result
    );
    let freed = store.remove(&store.keys()).unwrap();
    assert!(freed > 0);
    assert!(store.keys().is_empty());
    assert!(store.dir.join("notes.run").exists() && store.dir.join("README").exists());
}

#[test]
fn table_reads_name_the_run_that_starts_the_path() {
    let text = "{=mean(learned_reverse.runs[0].table.neighbour[:15])} and \
                {=x.table} but not {=y.tables} nor {=z.table_of}; {=learned_reverse.table.cos}";
    assert_eq!(table_reads(text), vec!["learned_reverse", "x"]);
}
