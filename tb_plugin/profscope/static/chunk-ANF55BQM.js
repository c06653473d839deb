var r=e=>a=>{var c=e[a];if(c)return c();throw new Error("Module not found in bundle: "+a)};var b=["trace","xla"];export{r as a,b};
