//! Static bearer tokens (`--token-auth-file`, upstream's tokenfile
//! authenticator): a CSV file of `token,user,uid[,"group1,group2"]` lines.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::{AuthError, TokenAuthenticator, TokenResponse, UserInfo};

#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: line {line}: {problem}")]
    Syntax {
        path: PathBuf,
        line: usize,
        problem: String,
    },
    #[error("token file '{path}' must have at least 3 columns (token, user name, user uid), found {found}")]
    Columns { path: PathBuf, found: usize },
}

/// The users of a token file, by token.
#[derive(Debug, Default)]
pub struct TokenFile {
    tokens: HashMap<String, UserInfo>,
}

impl TokenFile {
    /// Reads a token file (blocking file I/O: call it at startup).
    pub fn load(path: &Path) -> Result<Self, TokenFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(path, &text)
    }

    fn parse(path: &Path, text: &str) -> Result<Self, TokenFileError> {
        let mut tokens = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            // Like Go's csv reader, blank lines are skipped.
            if line.trim().is_empty() {
                continue;
            }
            let record = csv_record(line).map_err(|problem| TokenFileError::Syntax {
                path: path.to_owned(),
                line: index + 1,
                problem,
            })?;
            if record.len() < 3 {
                return Err(TokenFileError::Columns {
                    path: path.to_owned(),
                    found: record.len(),
                });
            }
            if record[0].is_empty() {
                tracing::warn!(path = %path.display(), line = index + 1, "empty token in token file");
                continue;
            }
            let groups = match record.get(3) {
                Some(groups) => groups.split(',').map(str::to_owned).collect(),
                None => Vec::new(),
            };
            let user = UserInfo {
                name: record[1].clone(),
                uid: record[2].clone(),
                groups,
                ..UserInfo::default()
            };
            if tokens.insert(record[0].clone(), user).is_some() {
                tracing::warn!(path = %path.display(), line = index + 1, "duplicate token in token file");
            }
        }
        Ok(TokenFile { tokens })
    }
}

/// One CSV record (RFC 4180 quoting, as Go's encoding/csv reads it).
fn csv_record(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => return Err("extraneous or missing \" in quoted-field".into()),
                }
            }
            match chars.next() {
                None => {
                    fields.push(field);
                    return Ok(fields);
                }
                Some(',') => fields.push(field),
                Some(_) => return Err("extraneous or missing \" in quoted-field".into()),
            }
        } else {
            loop {
                match chars.next() {
                    None => {
                        fields.push(field);
                        return Ok(fields);
                    }
                    Some(',') => break,
                    Some('"') => return Err("bare \" in non-quoted-field".into()),
                    Some(c) => field.push(c),
                }
            }
            fields.push(field);
        }
    }
}

#[async_trait]
impl TokenAuthenticator for TokenFile {
    async fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenResponse>, AuthError> {
        Ok(self.tokens.get(token).map(|user| TokenResponse {
            user: user.clone(),
            audiences: audiences.to_vec(),
        }))
    }

    fn audience_agnostic(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_users_uids_and_quoted_groups() {
        let text = "abc,alice,1001,\"dev,ops\"\n\ndef,bob,1002\n";
        let file = TokenFile::parse(Path::new("t.csv"), text).unwrap();
        let alice = &file.tokens["abc"];
        assert_eq!(alice.name, "alice");
        assert_eq!(alice.uid, "1001");
        assert_eq!(alice.groups, vec!["dev", "ops"]);
        assert!(file.tokens["def"].groups.is_empty());
    }

    #[test]
    fn too_few_columns_and_bad_quotes_are_errors() {
        let err = TokenFile::parse(Path::new("t.csv"), "abc,alice\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "token file 't.csv' must have at least 3 columns (token, user name, user uid), found 2"
        );
        assert!(TokenFile::parse(Path::new("t.csv"), "a,\"b,c\n").is_err());
        assert!(TokenFile::parse(Path::new("t.csv"), "a,b\"x,c\n").is_err());
    }
}
