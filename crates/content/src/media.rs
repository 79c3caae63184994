//! Images in questions: the types a content file may carry (PNG, JPEG, GIF, WebP, told by
//! their first bytes, never by the file's name: an SVG can carry script, and a name can lie),
//! their limits, their size read from the header, and reading one from inside a quiz's
//! directory. The bytes go to the `media` table (by SHA-256) in the import's transaction; the
//! content keeps only the reference ([`super::model::Image`]).

use std::fmt;
use std::io::Read;
use std::path::{Component, Path};
use std::sync::Arc;

use sha2::{Digest, Sha256};

/// The most bytes one image may have.
pub const MAX_IMAGE_BYTES: u64 = 2 << 20;
/// The most bytes a quiz's images may have together (each distinct file counted once).
pub const MAX_QUIZ_MEDIA_BYTES: u64 = 10 << 20;

/// An image type quizd serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageType {
    Png,
    Jpeg,
    Gif,
    Webp,
}

impl ImageType {
    /// The type of `bytes` by their magic number, if it is one quizd serves.
    pub fn sniff(bytes: &[u8]) -> Option<Self> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Self::Png)
        } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
            Some(Self::Jpeg)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(Self::Gif)
        } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
            Some(Self::Webp)
        } else {
            None
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
        }
    }

    /// Width and height in pixels, where the header says them plainly (every PNG and GIF,
    /// baseline and progressive JPEG, the three WebP encodings); `None` otherwise. Reads at
    /// most the bytes given, once.
    pub fn dimensions(self, b: &[u8]) -> Option<(u32, u32)> {
        let be16 = |i: usize| Some(u32::from(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])));
        let le16 = |i: usize| Some(u32::from(u16::from_le_bytes([*b.get(i)?, *b.get(i + 1)?])));
        let le24 = |i: usize| {
            Some(u32::from_le_bytes([
                *b.get(i)?,
                *b.get(i + 1)?,
                *b.get(i + 2)?,
                0,
            ]))
        };
        let dims = match self {
            Self::Png if b.get(12..16) == Some(b"IHDR") => {
                let be32 = |i: usize| Some(u32::from_be_bytes(b.get(i..i + 4)?.try_into().ok()?));
                (be32(16)?, be32(20)?)
            }
            Self::Png => return None,
            Self::Gif => (le16(6)?, le16(8)?),
            Self::Webp => match b.get(12..16)? {
                b"VP8 " => (le16(26)? & 0x3fff, le16(28)? & 0x3fff),
                b"VP8L" => {
                    let bits = u32::from_le_bytes(b.get(21..25)?.try_into().ok()?);
                    ((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1)
                }
                b"VP8X" => (le24(24)? + 1, le24(27)? + 1),
                _ => return None,
            },
            Self::Jpeg => {
                // Marker segments after SOI, until a start-of-frame (SOF0–SOF15 but DHT, JPG
                // and DAC), which holds the height then the width.
                let mut i = 2;
                loop {
                    if *b.get(i)? != 0xff {
                        return None;
                    }
                    let marker = *b.get(i + 1)?;
                    if marker == 0xff {
                        i += 1;
                        continue;
                    }
                    if (0xd0..=0xd9).contains(&marker) || marker == 0x01 {
                        i += 2;
                        continue;
                    }
                    if (0xc0..=0xcf).contains(&marker) && ![0xc4, 0xc8, 0xcc].contains(&marker) {
                        break (be16(i + 7)?, be16(i + 5)?);
                    }
                    i += 2 + usize::try_from(be16(i + 2)?).ok()?;
                }
            }
        };
        (dims.0 > 0 && dims.1 > 0).then_some(dims)
    }
}

/// One image file read for an import: its name (the SHA-256 of its bytes, hex), its type and
/// its bytes (shared: a content is cloned on its way to the store).
#[derive(Clone, PartialEq, Eq)]
pub struct MediaFile {
    pub sha256: String,
    pub kind: ImageType,
    pub bytes: Arc<[u8]>,
}

impl fmt::Debug for MediaFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}, {} bytes)",
            self.sha256,
            self.kind.content_type(),
            self.bytes.len()
        )
    }
}

impl MediaFile {
    /// The file for `bytes`, if they are an image quizd serves.
    pub fn new(bytes: Vec<u8>) -> Option<Self> {
        let kind = ImageType::sniff(&bytes)?;
        Some(Self {
            sha256: hex::encode(Sha256::digest(&bytes)),
            kind,
            bytes: bytes.into(),
        })
    }
}

/// The image files an imported content refers to, read from its directory. Not part of what
/// the content says (it is never serialized, and so never hashed): each file is named by the
/// hash its question's image carries, so two contents equal in everything else are equal
/// whatever files travel with them. Empty for content read from the database.
#[derive(Clone, Default)]
pub struct Media(pub Vec<MediaFile>);

impl PartialEq for Media {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl fmt::Debug for Media {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.0).finish()
    }
}

/// Reads the image at `path` (as written in quiz.toml) from inside `dir`: a relative path
/// with no `..`, resolving (symlinks followed) to a regular file inside the directory, at most
/// [`MAX_IMAGE_BYTES`], a PNG, JPEG, GIF or WebP by its first bytes. The error is a sentence
/// for the content error report.
pub fn read_image(dir: &Path, path: &str) -> Result<MediaFile, String> {
    let relative = Path::new(path);
    if path.is_empty()
        || path.contains('\0')
        || !relative
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "image '{path}' must be a relative path inside the quiz's directory (no '..', not absolute)"
        ));
    }
    let root = dir
        .canonicalize()
        .map_err(|e| format!("the quiz's directory cannot be read: {e}"))?;
    let file = root
        .join(relative)
        .canonicalize()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!("image '{path}' does not exist"),
            _ => format!("image '{path}' cannot be read: {e}"),
        })?;
    if !file.starts_with(&root) {
        return Err(format!(
            "image '{path}' leads outside the quiz's directory (a symbolic link?)"
        ));
    }
    let too_large = |n: u64| {
        format!(
            "image '{path}' is {n} bytes; an image may have at most 2 MiB ({MAX_IMAGE_BYTES} bytes)"
        )
    };
    let meta =
        std::fs::metadata(&file).map_err(|e| format!("image '{path}' cannot be read: {e}"))?;
    if !meta.is_file() {
        return Err(format!("image '{path}' is not a file"));
    }
    if meta.len() > MAX_IMAGE_BYTES {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&file)
        .and_then(|f| f.take(MAX_IMAGE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("image '{path}' cannot be read: {e}"))?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    if bytes.is_empty() {
        return Err(format!("image '{path}' is empty"));
    }
    MediaFile::new(bytes).ok_or_else(|| {
        format!(
            "image '{path}' is not a PNG, JPEG, GIF or WebP image by its content (SVG and other types are refused: an SVG can carry script)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1×1 PNG as the tests write it: signature and an IHDR of `w`×`h`.
    fn png_header(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend(w.to_be_bytes());
        b.extend(h.to_be_bytes());
        b.extend([8, 6, 0, 0, 0]);
        b
    }

    #[test]
    fn the_type_is_told_by_the_first_bytes_and_never_by_the_name() {
        assert_eq!(ImageType::sniff(&png_header(3, 2)), Some(ImageType::Png));
        assert_eq!(
            ImageType::sniff(&[0xff, 0xd8, 0xff, 0xe0]),
            Some(ImageType::Jpeg)
        );
        assert_eq!(
            ImageType::sniff(b"GIF89a\x05\0\x07\0"),
            Some(ImageType::Gif)
        );
        assert_eq!(
            ImageType::sniff(b"RIFF\x10\0\0\0WEBPVP8 "),
            Some(ImageType::Webp)
        );
        for refused in [
            &b"<svg xmlns='http://www.w3.org/2000/svg'/>"[..],
            b"<?xml version='1.0'?><svg/>",
            b"\x89PNX\r\n\x1a\n",
            b"RIFF\x10\0\0\0WAVEfmt ",
            b"GIF90a",
            b"",
        ] {
            assert_eq!(ImageType::sniff(refused), None, "{refused:?}");
        }
    }

    #[test]
    fn width_and_height_come_from_each_header() {
        assert_eq!(
            ImageType::Png.dimensions(&png_header(640, 480)),
            Some((640, 480))
        );
        assert_eq!(
            ImageType::Gif.dimensions(b"GIF89a\x05\0\x07\0"),
            Some((5, 7))
        );
        // A JPEG: SOI, an APP0 of 4 bytes, SOF0 with height 2 and width 3.
        let jpeg = [
            0xff, 0xd8, 0xff, 0xe0, 0, 4, 0, 0, 0xff, 0xc0, 0, 11, 8, 0, 2, 0, 3, 1,
        ];
        assert_eq!(ImageType::Jpeg.dimensions(&jpeg), Some((3, 2)));
        let mut lossless = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        // width − 1 = 9, height − 1 = 4: 14 bits each.
        lossless.extend((9u32 | (4 << 14)).to_le_bytes());
        assert_eq!(ImageType::Webp.dimensions(&lossless), Some((10, 5)));
        let mut extended = b"RIFF\0\0\0\0WEBPVP8X\0\0\0\0\0\0\0\0".to_vec();
        extended.extend([99, 0, 0, 49, 0, 0]);
        assert_eq!(ImageType::Webp.dimensions(&extended), Some((100, 50)));
        // Truncated headers say nothing rather than guess.
        assert_eq!(ImageType::Png.dimensions(&png_header(1, 1)[..20]), None);
        assert_eq!(ImageType::Jpeg.dimensions(&jpeg[..12]), None);
    }

    #[test]
    fn a_file_outside_the_directory_missing_oversize_or_not_an_image_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let quiz = dir.path().join("quiz");
        std::fs::create_dir_all(quiz.join("media")).unwrap();
        std::fs::write(quiz.join("media/ok.png"), png_header(4, 4)).unwrap();
        std::fs::write(dir.path().join("secret.png"), png_header(4, 4)).unwrap();
        std::fs::write(quiz.join("media/fake.png"), b"<svg onload='alert(1)'/>").unwrap();
        std::fs::write(
            quiz.join("media/big.png"),
            vec![0u8; MAX_IMAGE_BYTES as usize + 1],
        )
        .unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.png"), quiz.join("media/link.png"))
            .unwrap();

        let ok = read_image(&quiz, "media/ok.png").unwrap();
        assert_eq!(ok.kind, ImageType::Png);
        assert_eq!(ok.sha256, hex::encode(Sha256::digest(png_header(4, 4))));
        assert!(read_image(&quiz, "./media/ok.png").is_ok());
        let refused = |path: &str| read_image(&quiz, path).unwrap_err();
        assert!(refused("../secret.png").contains("no '..', not absolute"));
        assert!(refused("media/../../secret.png").contains("no '..'"));
        let absolute = dir.path().join("secret.png").display().to_string();
        assert!(refused(&absolute).contains("not absolute"));
        assert!(refused("media/link.png").contains("leads outside the quiz's directory"));
        assert!(refused("media/none.png").contains("does not exist"));
        assert!(refused("media/fake.png").contains("not a PNG, JPEG, GIF or WebP"));
        assert!(refused("media/big.png").contains("at most 2 MiB"));
        assert!(refused("media").contains("is not a file"));
        assert!(refused("").contains("relative path"));
    }
}
