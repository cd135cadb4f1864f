"""What a run writes of the new version: dense segments streamed as pages arrive
(`stream`, over `segments`) and compacted (`compaction`), the copy-on-write text index
(`text_index`), garbage collection of what no kept version names (`garbage_collection`), and
a full disk met on the way (`full_disk`)."""
