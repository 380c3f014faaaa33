//! Normalize Kanata pipeline traces (work in progress: see issue 3).
